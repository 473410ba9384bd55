import type { RunningPart, Services } from '../services';

export const serviceRoles = ['web', 'worker', 'media', 'scheduler'] as const;
export type ServiceRole = (typeof serviceRoles)[number];

/**
 * Each role's code is loaded only by a process that runs it. A worker, media or scheduler process
 * holds no Koa app and no metrics registry: the registry's event-loop monitor alone wakes a process
 * a hundred times a second (about 8 ms of CPU per second, idle).
 */
export const startServiceRole: Record<ServiceRole, (services: Services) => Promise<RunningPart>> = {
  web: async (services) => (await import('../api/web.js')).startWeb(services),
  worker: async (services) => (await import('../workers/worker.js')).startWorker(services),
  media: async (services) => (await import('../workers/media.js')).startMedia(services),
  scheduler: async (services) => (await import('../workers/scheduler.js')).startScheduler(services),
};
