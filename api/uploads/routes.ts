import { caller } from '../http/authentication';
import { errors } from '../http/errors';
import { readBudget, writeBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema, isUuid } from '../../common/validation';
import { createUpload, findOwnUploads, uploadContentTypes, uploadView } from './uploads';

const ticketSchema = schema.response({
  id: schema.uuid(),
  url: schema.string(),
  fields: { type: 'object', additionalProperties: { type: 'string' } },
  object_key: schema.string(),
  expires_in: schema.integer(),
}, { title: 'UploadTicket' });

const uploadSchema = schema.response({
  id: schema.uuid(),
  status: schema.string({ enum: ['pending', 'completed'] }),
  content_type: schema.string(),
  size: schema.nullable(schema.integer()),
  created_at: schema.string({ format: 'date-time' }),
}, { title: 'Upload' });

const uploadId = '8e2d4c6a-1b3f-4a5e-9c7d-0f1e2d3c4b5a';
const userId = '3f1c2a9e-8b7d-4e51-9a0c-6d2f4b8e1a73';

export const uploadRoutes = [
  defineRoute<{ content_type: string }>({
    method: 'POST', path: '/v1/uploads', access: 'token', limits: [writeBudget()],
    summary: 'A presigned multipart POST ticket for one photo (600 s, 15 MB); send every field unchanged and the file last in `file`.',
    body: schema.object({ content_type: schema.string({ enum: Object.keys(uploadContentTypes) }) }, ['content_type']),
    bodyExample: { content_type: 'image/jpeg' },
    responses: {
      201: {
        description: 'Upload ticket',
        schema: ticketSchema,
        example: {
          id: uploadId,
          url: 'http://127.0.0.1:8080/media',
          fields: {
            key: `uploads/${userId}/${uploadId}.jpg`,
            'Content-Type': 'image/jpeg',
            policy: 'eyJleHBpcmF0aW9uIjoiMjAyNi0xMS0yM1QxMjoxMDowMFoifQ==',
            'x-amz-algorithm': 'AWS4-HMAC-SHA256',
            'x-amz-credential': 'S3RVER/20261123/us-east-1/s3/aws4_request',
            'x-amz-date': '20261123T120000Z',
            'x-amz-signature': '4f6c1d0e9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d',
          },
          object_key: `uploads/${userId}/${uploadId}.jpg`,
          expires_in: 600,
        },
      },
    },
    handler: async (ctx, { body }) => {
      ctx.status = 201;
      ctx.body = await createUpload(ctx.services.db, ctx.services.storage, caller(ctx).id, body.content_type);
    },
  }),
  defineRoute<unknown, unknown, { id: string }>({
    method: 'GET', path: '/v1/uploads/{id}', access: 'token', limits: [readBudget()],
    summary: 'An upload: `completed` once its object is in storage, with its size.',
    responses: { 200: { description: 'Upload', schema: uploadSchema } },
    errors: { not_found: "Absent or another user's upload." },
    handler: async (ctx, { params }) => {
      if (!isUuid(params.id)) throw errors.notFound();
      const [row] = await findOwnUploads(ctx.services.db, caller(ctx).id, [params.id.toLowerCase()]);
      if (!row) throw errors.notFound();
      ctx.body = uploadView(row, await ctx.services.storage.stat(row.object_key));
    },
  }),
];
