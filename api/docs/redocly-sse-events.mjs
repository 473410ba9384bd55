// A `@redocly/cli` plugin (redocly.yaml) teaching the linter the document's one vendor extension:
// `x-sse-events` on a `text/event-stream` media type maps each event name to the schema of its
// `data` (api/openapi.ts). Typed so, the event schemas are linted like every schema and their `$ref`s
// count as uses: without it they are components "never used".
export default function sseEvents() {
  return {
    id: 'sse-events',
    typeExtension: {
      oas3: (types) => ({
        ...types,
        SseEvents: { properties: {}, additionalProperties: 'Schema' },
        MediaType: { ...types.MediaType, properties: { ...types.MediaType.properties, 'x-sse-events': 'SseEvents' } },
      }),
    },
  };
}
