import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { allRoutes } from '../../api/routes';
import { unbuiltRoutes } from '../../api/unbuilt';
import { problemsOf } from '../../common/validation';
import { useTestApp } from '../harness';

const run = promisify(execFile);
const repository = path.resolve(__dirname, '../../..');
const methods = ['get', 'post', 'put', 'patch', 'delete'];

type Operation = Record<string, any>;

function operationsOf(document: any): [string, string, Operation][] {
  return Object.entries(document.paths as Record<string, Record<string, Operation>>).flatMap(([route, item]) =>
    Object.entries(item).filter(([method]) => methods.includes(method)).map(([method, operation]) => [route, method, operation] as [string, string, Operation]));
}

/** Every object schema reachable from `schema`, `$ref`s followed once each. */
function objectSchemas(document: any, schema: any, seen = new Set<unknown>()): any[] {
  if (!schema || typeof schema !== 'object' || seen.has(schema)) return [];
  seen.add(schema);
  if (typeof schema.$ref === 'string') return objectSchemas(document, document.components.schemas[schema.$ref.split('/').pop()], seen);
  const inner = [...Object.values(schema.properties ?? {}), schema.items, ...(schema.anyOf ?? [])];
  return [...(schema.properties ? [schema] : []), ...inner.flatMap((child) => objectSchemas(document, child, seen))];
}

describe('/v1/openapi.json, complete enough for client generators', () => {
  const t = useTestApp();
  let document: any;

  before(async () => {
    document = (await t.api.get('/v1/openapi.json')).body;
  });

  it('passes `@redocly/cli lint` with its recommended rules: no error, no warning (offline, no telemetry)', async function () {
    this.timeout(120_000);
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'openapi-lint-'));
    try {
      const file = path.join(scratch, 'openapi.json');
      writeFileSync(file, JSON.stringify(document));
      const cli = path.join(repository, 'node_modules/@redocly/cli/bin/cli.js');
      const outcome = await run(process.execPath, [cli, 'lint', file, '--config', path.join(repository, 'redocly.yaml'), '--format', 'json', '--max-problems', '1000'], {
        cwd: scratch,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
        maxBuffer: 64 * 1024 * 1024,
      }).catch((error: { stdout: string; stderr: string; code: number }) => error);
      const report = JSON.parse(outcome.stdout) as { problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[] };
      const problems = report.problems.map((problem) => `${problem.severity} ${problem.ruleId} ${problem.location[0]?.pointer}: ${problem.message}`);
      expect(problems, problems.join('\n')).to.deep.equal([]);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('finds in every built route what its documentation is derived from (a new route that lacks it is named here)', () => {
    const problems: string[] = [];
    for (const route of allRoutes('http://127.0.0.1').filter((candidate) => candidate.handler)) {
      const name = `${route.method} ${route.path}`;
      if (!route.summary?.trim()) problems.push(`${name}: no \`summary\``);
      const answers = Object.entries(route.responses ?? {});
      if (!answers.length) problems.push(`${name}: no \`responses\` (declare each success status with a description, and a schema built with \`schema.response\`)`);
      for (const [status, answer] of answers) {
        if (!['204', '304'].includes(status) && !answer?.schema) problems.push(`${name} ${status}: a success answer without a \`schema\``);
      }
    }
    expect(problems, problems.join('\n')).to.deep.equal([]);
  });

  it('gives every operation a unique operationId, a tag, a success and its error answers in the envelope', () => {
    const ids = new Set<string>();
    for (const [route, method, operation] of operationsOf(document)) {
      const name = `${method.toUpperCase()} ${route}`;
      expect(operation.operationId, name).to.match(/^[a-z][A-Za-z0-9]+$/);
      expect(ids.has(operation.operationId), `${name}: operationId used twice`).to.equal(false);
      ids.add(operation.operationId);
      expect(operation.tags, name).to.have.length(1);
      const statuses = Object.keys(operation.responses);
      expect(statuses.some((status) => status.startsWith('2')), name).to.equal(true);
      expect(statuses, name).to.include('500');
      for (const status of statuses.filter((code) => Number(code) >= 400)) {
        const schema = operation.responses[status].content['application/json'].schema.$ref;
        expect(schema, `${name} ${status}`).to.equal(status === '422' ? '#/components/schemas/ValidationError' : '#/components/schemas/Error');
      }
      if (operation.security.some((requirement: object) => Object.keys(requirement).length === 0)) continue;
      expect(operation.responses, `${name} needs a token, so it answers 401`).to.have.property('401');
    }
  });

  it('documents the error answers the contract gives, per endpoint', () => {
    const codesOf = (route: string, method: string, status: number) =>
      Object.keys(document.paths[route][method].responses[status]?.content['application/json'].examples ?? {});
    expect(codesOf('/v1/payments', 'post', 403)).to.have.members(['forbidden', 'registration_required']);
    expect(codesOf('/v1/payments', 'post', 409)).to.have.members(['idempotency_key_reused', 'request_in_progress']);
    expect(codesOf('/v1/payments', 'post', 429)).to.deep.equal(['rate_limited']);
    expect(codesOf('/v1/payments', 'post', 503)).to.deep.equal(['provider_unavailable']);
    expect(codesOf('/v1/generations', 'post', 422)).to.have.members(['validation_error', 'characters_required']);
    expect(codesOf('/v1/generations', 'post', 402)).to.deep.equal(['insufficient_credits']);
    expect(codesOf('/v1/generations', 'post', 409)).to.deep.equal(['idempotency_key_reused']);
    expect(codesOf('/v1/auth/register', 'post', 409)).to.deep.equal(['email_taken']);
    expect(codesOf('/v1/auth/idp_c', 'post', 401)).to.have.members(['auth_required', 'invalid_credentials']);
    expect(codesOf('/v1/auth/idp_c', 'post', 503)).to.deep.equal(['provider_unavailable']);
    expect(codesOf('/v1/speech/transcriptions', 'post', 413)).to.deep.equal(['payload_too_large']);
    expect(codesOf('/v1/speech/transcriptions', 'post', 415)).to.deep.equal(['unsupported_media_type']);
    expect(codesOf('/v1/generations/{id}/stream', 'get', 429)).to.have.members(['rate_limited', 'too_many_streams']);
    for (const unbuilt of unbuiltRoutes) {
      const method = unbuilt.method.toLowerCase();
      expect(codesOf(unbuilt.path, method, 501), `${unbuilt.method} ${unbuilt.path}`).to.deep.equal(['not_implemented']);
      if (unbuilt.access === 'registered') expect(codesOf(unbuilt.path, method, 403), `${unbuilt.method} ${unbuilt.path}`).to.deep.equal(['registration_required']);
    }
    const validation = document.paths['/v1/generations'].post.responses['422'].content['application/json'].examples.validation_error.value;
    expect(validation.error.details[0]).to.have.keys('loc', 'msg', 'type');
  });

  it('declares every path parameter of every operation', () => {
    for (const [route, method, operation] of operationsOf(document)) {
      const declared = operation.parameters.filter((parameter: any) => parameter.in === 'path').map((parameter: any) => parameter.name);
      const inPath = [...route.matchAll(/\{([^}]+)\}/g)].map(([, name]) => name);
      expect(declared, `${method.toUpperCase()} ${route}`).to.have.members(inPath);
    }
  });

  it('marks the fields of every answer required (the service always sends them), so generated clients need no presence checks', () => {
    for (const [route, method, operation] of operationsOf(document)) {
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        const schema = response.content?.['application/json']?.schema;
        for (const object of objectSchemas(document, schema)) {
          const name = `${method.toUpperCase()} ${route} ${status}: ${object.title ?? JSON.stringify(Object.keys(object.properties))}`;
          expect(object.required, name).to.be.an('array').that.is.not.empty;
        }
      }
    }
  });

  it('shows examples of the main bodies', () => {
    const requestExample = (route: string, method: string) => document.paths[route][method].requestBody.content['application/json'].example;
    const answerExample = (route: string, method: string, status: number) => document.paths[route][method].responses[status].content['application/json'].example;
    expect(requestExample('/v1/auth/anonymous', 'post')).to.have.property('device_id');
    expect(answerExample('/v1/auth/anonymous', 'post', 200)).to.have.keys('access_token', 'refresh_token', 'expires_in', 'user');
    expect(requestExample('/v1/uploads', 'post')).to.deep.equal({ content_type: 'image/jpeg' });
    expect(answerExample('/v1/uploads', 'post', 201)).to.have.property('fields');
    expect(requestExample('/v1/generations', 'post')).to.have.property('characters');
    expect(answerExample('/v1/generations/{id}', 'get', 200)).to.include({ status: 'succeeded' });
    expect(requestExample('/v1/payments', 'post')).to.have.property('product_id');
    expect(answerExample('/v1/payments', 'post', 201)).to.have.property('payment_url');
    expect(answerExample('/v1/effects/{id_or_slug}', 'get', 200)).to.have.property('characters');
  });

  it('names the shared shapes in components, for generated types', () => {
    expect(document.components.schemas).to.include.keys('Error', 'ValidationError', 'User', 'TokenResponse', 'Effect', 'Generation', 'Payment', 'CreatedPayment', 'UploadTicket');
    expect(document.paths['/v1/generations/{id}'].get.responses['200'].content['application/json'].schema).to.deep.equal({ $ref: '#/components/schemas/Generation' });
  });

  it('names the data of each stream\'s events (x-sse-events and the answer\'s description), and the documented frames match them', () => {
    const streams: Record<string, Record<string, string>> = {
      '/v1/generations/{id}/stream': { status: 'GenerationStreamEvent' },
      '/v1/user-effects/{id}/stream': { status: 'UserEffectStreamEvent' },
      // The contract's framing: bare `data:` lines, which Server-Sent Events call `message`.
      '/v1/payments/{id}/stream': { message: 'PaymentStreamEvent' },
    };
    const streaming = operationsOf(document).filter(([, , operation]) => operation.responses['200']?.content?.['text/event-stream']);
    expect(streaming.map(([route]) => route)).to.have.members(Object.keys(streams));
    for (const [route, , operation] of streaming) {
      const answer = operation.responses['200'];
      const media = answer.content['text/event-stream'];
      expect(media['x-sse-events'], route).to.deep.equal(Object.fromEntries(Object.entries(streams[route]).map(([event, name]) => [event, { $ref: `#/components/schemas/${name}` }])));
      for (const [event, name] of Object.entries(streams[route])) {
        expect(answer.description, route).to.contain(`\`${event}\``).and.contain(`\`${name}\` (\`#/components/schemas/${name}\`)`);
        const schema = document.components.schemas[name];
        expect(schema.required, name).to.have.members(Object.keys(schema.properties));
      }
      const frames = (media.example as string).split('\n\n').filter(Boolean);
      expect(frames, route).not.to.be.empty;
      for (const frame of frames) {
        const event = /^event: (.+)$/m.exec(frame)?.[1] ?? 'message';
        const name = streams[route][event];
        expect(name, `${route}: an event named ${event}`).to.be.a('string');
        expect(problemsOf(document.components.schemas[name], JSON.parse(/^data: (.+)$/m.exec(frame)![1]), 'typed'), `${route}: ${frame}`).to.deep.equal([]);
      }
    }
  });
});
