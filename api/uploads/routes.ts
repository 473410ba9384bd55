import { caller } from '../http/authentication';
import { errors } from '../http/errors';
import { readBudget, writeBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema, isUuid } from '../http/validation';
import { createUpload, findOwnUploads, uploadContentTypes, uploadView } from './uploads';

const ticketSchema = schema.object({
  id: schema.uuid(),
  url: schema.string(),
  fields: { type: 'object', additionalProperties: { type: 'string' } },
  object_key: schema.string(),
  expires_in: schema.integer(),
});

const uploadSchema = schema.object({
  id: schema.uuid(),
  status: schema.string({ enum: ['pending', 'completed'] }),
  content_type: schema.string(),
  size: schema.nullable(schema.integer()),
  created_at: schema.string({ format: 'date-time' }),
});

export const uploadRoutes = [
  defineRoute<{ content_type: string }>({
    method: 'POST', path: '/v1/uploads', access: 'token', limits: [writeBudget()],
    summary: 'A presigned multipart POST ticket for one photo (600 s, 15 MB); send every field unchanged and the file last in `file`.',
    body: schema.object({ content_type: schema.string({ enum: Object.keys(uploadContentTypes) }) }, ['content_type']),
    responses: { 201: { description: 'Upload ticket', schema: ticketSchema } },
    handler: async (ctx, { body }) => {
      ctx.status = 201;
      ctx.body = await createUpload(ctx.services.db, ctx.services.storage, caller(ctx).id, body.content_type);
    },
  }),
  defineRoute<unknown, unknown, { id: string }>({
    method: 'GET', path: '/v1/uploads/{id}', access: 'token', limits: [readBudget()],
    summary: 'An upload: `completed` once its object is in storage, with its size.',
    responses: { 200: { description: 'Upload', schema: uploadSchema } },
    handler: async (ctx, { params }) => {
      if (!isUuid(params.id)) throw errors.notFound();
      const [row] = await findOwnUploads(ctx.services.db, caller(ctx).id, [params.id.toLowerCase()]);
      if (!row) throw errors.notFound();
      ctx.body = uploadView(row, await ctx.services.storage.stat(row.object_key));
    },
  }),
];
