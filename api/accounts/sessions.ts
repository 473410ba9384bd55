import type { Knex } from 'knex';
import { issueRefreshToken, rotateRefreshToken } from '../../db/accounts/refresh-tokens';
import type { Services } from '../../services';
import type { Access } from '../http/authentication';
import type { ApiContext } from '../http/context';
import { errors } from '../http/errors';
import { operationLimit, type AuthOperation } from '../http/rate-limit';
import { defineRoute, type Route, type RouteInput } from '../http/route';
import { schema, type JsonSchema } from '../../common/validation';
import { signAccessToken } from '../tokens/access-token';
import { recordUserDevice } from './devices';
import { userExample, userSchema, userView, type UserView } from './users';

/** The TokenResponse of the contract: every sign-in, register, refresh and change-password answers it. */
export interface TokenResponse {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  user: UserView;
}

const tokenResponseSchema = schema.response({
  access_token: schema.string(),
  refresh_token: schema.string(),
  expires_in: schema.integer(),
  user: userSchema,
}, { title: 'TokenResponse' });

const tokenResponseExample: TokenResponse = {
  access_token: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIzZjFjMmE5ZSJ9.c2lnbmF0dXJl',
  refresh_token: 'kM3q9XvJ2bT7sYw1LpQ8nR4dF6hZ0aC5eG2iK7mO9uU',
  expires_in: 900,
  user: userExample,
};

/**
 * An endpoint that answers a TokenResponse (the sign-ins, register, refresh, change-password):
 * `POST /v1/auth/<operation>` under the operation's own budget per request source.
 */
export function tokenRoute<Body>(spec: {
  operation: AuthOperation;
  access: Access;
  status: 200 | 201;
  description: string;
  summary: string;
  body: JsonSchema;
  bodyExample?: unknown;
  errors?: Route['errors'];
  session: (ctx: ApiContext, input: RouteInput<Body, unknown, unknown>) => Promise<TokenResponse>;
}): Route {
  return defineRoute<Body>({
    method: 'POST', path: `/v1/auth/${spec.operation}`, access: spec.access, limits: [operationLimit(spec.operation)],
    summary: spec.summary,
    body: spec.body,
    bodyExample: spec.bodyExample,
    responses: { [spec.status]: { description: spec.description, schema: tokenResponseSchema, example: tokenResponseExample } },
    errors: spec.errors,
    handler: async (ctx, input) => {
      ctx.body = await spec.session(ctx, input);
      ctx.status = spec.status;
    },
  });
}

export interface Session {
  userId: string;
  deviceHash: string | null;
  /** Continues a refresh-token family (refresh); a sign-in starts a new one. */
  familyId?: string;
}

/**
 * Opens a session for an account in the caller's transaction: counts a sign-in (guests expire
 * 30 days after their last one, and a refresh counts too, or an active guest would expire),
 * remembers the device, and issues the token pair.
 */
export async function startSession(trx: Knex.Transaction, services: Services, session: Session): Promise<TokenResponse> {
  const { config, storage } = services;
  await trx('users').where({ id: session.userId }).update({ last_sign_in_at: trx.fn.now() });
  if (session.deviceHash) await recordUserDevice(trx, session.userId, session.deviceHash);
  const refresh = await issueRefreshToken(trx, {
    userId: session.userId,
    deviceHash: session.deviceHash,
    ttlSeconds: config.refreshTokenTtlS,
    familyId: session.familyId,
  });
  return {
    access_token: await signAccessToken(config.tokenSecret, session.userId, config.accessTokenTtlS),
    refresh_token: refresh.token,
    expires_in: config.accessTokenTtlS,
    user: await userView(trx, storage, session.userId),
  };
}

/**
 * `POST /v1/auth/refresh`: rotates the token (the new one continues its family and device binding).
 * A reused token has already revoked every session of its user when this answers 401.
 */
export async function refreshSession(services: Services, request: { refreshToken: string; deviceHash: string | null }): Promise<TokenResponse> {
  const answer = await services.db.transaction(async (trx) => {
    const rotation = await rotateRefreshToken(trx, request.refreshToken, request.deviceHash);
    // Not thrown here: the revocation that a reuse caused must commit although the answer is 401.
    if (rotation.outcome !== 'rotated') return null;
    const deviceHash = rotation.deviceHash ?? request.deviceHash;
    return startSession(trx, services, { userId: rotation.userId, deviceHash, familyId: rotation.familyId });
  });
  if (!answer) throw errors.authRequired();
  return answer;
}
