import type { ParameterizedContext } from 'koa';
import type { Services } from '../../services';

/** The signed-in caller, as the authentication middleware found it. */
export interface SessionUser {
  id: string;
  isAnonymous: boolean;
}

export interface ApiState {
  requestId: string;
  route?: string;
  user: SessionUser | null;
}

export interface ApiContextExtras {
  services: Services;
}

export type ApiContext = ParameterizedContext<ApiState, ApiContextExtras>;

declare module 'koa' {
  interface Request {
    /** Set by the body parser (koa-body). */
    body?: unknown;
  }
}
