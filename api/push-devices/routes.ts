import type { Platform } from '../../common/platform';
import { registerPushDevice, removePushDevice, type PushDevice } from '../../db/push/push-devices';
import { deviceHash } from '../accounts/devices';
import { caller } from '../http/authentication';
import { errors } from '../http/errors';
import { writeBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { isUuid, schema } from '../../common/validation';

const deviceSchema = schema.response({
  id: schema.uuid(),
  platform: schema.string({ enum: ['ios', 'android'] }),
  created_at: schema.string({ format: 'date-time' }),
}, { title: 'PushDevice' });

interface RegisterBody {
  token: string;
  platform: Platform;
  device_id?: string;
}

function shown(device: PushDevice) {
  return { id: device.id, platform: device.platform, created_at: device.created_at };
}

/** Push devices (docs/mobile.md): open to guests, under the per-user write budget. */
export const pushDeviceRoutes = [
  defineRoute<RegisterBody>({
    method: 'POST', path: '/v1/devices', access: 'token', limits: [writeBudget()],
    summary: 'Registers a push token: 201 new, 200 when already this account\'s; another account\'s token moves only with its device_id, else 403.',
    body: schema.object({
      // Gateway tokens are printable ASCII (hex for APNs, base64url and ':' for FCM).
      token: schema.string({ minLength: 1, maxLength: 4096, pattern: '^[\\x21-\\x7E]+$' }),
      platform: schema.string({ enum: ['ios', 'android'] }),
      device_id: schema.string({ minLength: 1, maxLength: 255 }),
    }, ['token', 'platform']),
    responses: {
      200: { description: 'The token was already this account\'s', schema: deviceSchema },
      201: { description: 'Registered (or moved here from the same installation)', schema: deviceSchema },
    },
    errors: { forbidden: 'The token belongs to another account and `device_id` does not match its installation.' },
    handler: async (ctx, { body }) => {
      const registration = await registerPushDevice(ctx.services.db, {
        userId: caller(ctx).id,
        token: body.token,
        platform: body.platform,
        deviceHash: body.device_id === undefined ? null : deviceHash(body.device_id),
      });
      if (registration.outcome === 'forbidden') throw errors.forbidden('This push token belongs to another account.');
      ctx.status = registration.outcome === 'existing' ? 200 : 201;
      ctx.body = shown(registration.device);
    },
  }),
  defineRoute<unknown, unknown, { id: string }>({
    method: 'DELETE', path: '/v1/devices/{id}', access: 'token', limits: [writeBudget()],
    summary: 'Unregisters a push device of the caller: 204; 404 when absent or another account\'s.',
    responses: { 204: { description: 'Removed' } },
    errors: { not_found: "Absent or another account's device." },
    handler: async (ctx, { params }) => {
      if (!isUuid(params.id) || !(await removePushDevice(ctx.services.db, caller(ctx).id, params.id))) throw errors.notFound();
      ctx.status = 204;
    },
  }),
];
