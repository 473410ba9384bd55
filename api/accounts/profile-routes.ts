import { deleteAccount } from '../../services/accounts/delete-account';
import { caller } from '../http/authentication';
import { readBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema } from '../../common/validation';
import { avatarContentTypes, avatarUploadTicket, bindAvatar, removeAvatar, type AvatarContentType } from './avatar';
import { fields } from './fields';
import { updateProfile } from './profile';
import { userExample, userSchema, userView } from './users';

/** `/v1/me`: the profile, open to guests too (the contract: who may call what); reads share the read budget. */
const userAnswer = { 200: { description: 'The user', schema: userSchema, example: userExample } };

export const profileRoutes = [
  defineRoute({
    method: 'GET', path: '/v1/me', access: 'token', limits: [readBudget()],
    summary: 'The signed-in user, with balance.',
    responses: userAnswer,
    handler: async (ctx) => {
      ctx.body = await userView(ctx.services.db, ctx.services.storage, caller(ctx).id);
    },
  }),
  defineRoute<{ name?: string | null; locale?: string }>({
    method: 'PATCH', path: '/v1/me', access: 'token', limits: [readBudget()],
    summary: 'Changes name and locale (ru or en; a region suffix is dropped, en-US becomes en).',
    body: schema.object({ name: schema.nullable(fields.name), locale: schema.string({ maxLength: 35 }) }),
    responses: userAnswer,
    handler: async (ctx, { body }) => {
      const { id } = caller(ctx);
      await updateProfile(ctx.services.db, id, body);
      ctx.body = await userView(ctx.services.db, ctx.services.storage, id);
    },
  }),
  defineRoute({
    method: 'DELETE', path: '/v1/me', access: 'token', limits: [readBudget()],
    summary: 'Deletes the account, its data and its files; an idp_b grant is revoked in the background.',
    responses: { 204: { description: 'Deleted' } },
    handler: async (ctx) => {
      await deleteAccount(ctx.services, caller(ctx).id);
      ctx.status = 204;
    },
  }),
  defineRoute<{ content_type: AvatarContentType }>({
    method: 'POST', path: '/v1/me/avatar/upload-url', access: 'token', limits: [readBudget()],
    summary: 'A presigned multipart POST ticket for a new avatar (600 s).',
    body: schema.object({ content_type: schema.string({ enum: Object.keys(avatarContentTypes) }) }, ['content_type']),
    responses: {
      200: {
        description: 'Upload ticket',
        schema: schema.response({
          url: schema.string(),
          fields: { type: 'object', additionalProperties: { type: 'string' } },
          object_key: schema.string(),
          expires_in: schema.integer(),
        }, { title: 'AvatarUploadTicket' }),
      },
    },
    handler: async (ctx, { body }) => {
      ctx.body = await avatarUploadTicket(ctx.services, caller(ctx).id, body.content_type);
    },
  }),
  defineRoute<{ object_key: string }>({
    method: 'PUT', path: '/v1/me/avatar', access: 'token', limits: [readBudget()],
    summary: 'Binds an uploaded avatar; it is re-encoded to JPEG without EXIF under the same key.',
    body: schema.object({ object_key: schema.string({ minLength: 1, maxLength: 1024 }) }, ['object_key']),
    responses: userAnswer,
    errors: {
      forbidden: "The key is not under the caller's own `avatars/<user_id>/` folder.",
      validation_error: 'Invalid body; or nothing was uploaded under the key, the file is too large, or it is not a JPEG, PNG or WebP image.',
    },
    handler: async (ctx, { body }) => {
      const { id } = caller(ctx);
      await bindAvatar(ctx.services, id, body.object_key);
      ctx.body = await userView(ctx.services.db, ctx.services.storage, id);
    },
  }),
  defineRoute({
    method: 'DELETE', path: '/v1/me/avatar', access: 'token', limits: [readBudget()],
    summary: 'Removes the avatar: avatar_url becomes null.',
    responses: userAnswer,
    handler: async (ctx) => {
      const { id } = caller(ctx);
      await removeAvatar(ctx.services, id);
      ctx.body = await userView(ctx.services.db, ctx.services.storage, id);
    },
  }),
];
