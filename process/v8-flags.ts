import v8 from 'node:v8';

/**
 * Imported at the top of main.ts, before any role's code loads: V8's allocation-site pretenuring is
 * turned off. A burst in which requests wait (a cold cache computed under 50 concurrent requests)
 * made V8 decide that the objects of every later request would live long and allocate them in the
 * old generation. From then on each request's short-lived objects were kept by dead old ones until a
 * full collection: about 2 MB promoted at every young collection, a tenth of a busy web process's CPU
 * in the collector. Without pretenuring nothing per request outlives a young collection; the
 * long-lived structures a process builds (the catalog cache) are copied once more on their way to the
 * old generation. The flag is read at collection time, so setting it at start is enough.
 */
v8.setFlagsFromString('--no-allocation-site-pretenuring');

/**
 * For a process that serves the web role, called as it starts, until `takeFeedbackAtDefault`: a
 * function gets its feedback vector (what V8 learns of the objects each of its operations meets,
 * and optimises from) after 1,000 calls instead of 8. Node's own hot functions are first called while
 * the process starts, on objects whose shapes V8 still changes then; feedback taken that early could
 * stay megamorphic, and the web role then served every request through V8's slow paths (`nextTick`'s
 * callback object defined by V8's runtime instead of by optimised code). Whether it did was a draw at
 * each start; with feedback taken once the process has settled it is the faster state every time
 * (`docs/benchmarks.md`). A process without the web role keeps V8's default: its hot paths run once a
 * generation rather than once a request.
 */
export function takeFeedbackLate(): void {
  v8.setFlagsFromString('--invocation-count-for-feedback-allocation=1000');
}

/**
 * V8's default again, called as the web role starts, once the process's infrastructure is up (its
 * database pool and LISTEN hub, and the roles started before the web role). What needed feedback
 * taken late was that start: set back there, the web role kept the faster state on every seed that
 * drew the slower one, and its own code (loaded only now, `process/roles.ts`) is not left in the
 * interpreter for its first 1,000 calls (`docs/benchmarks.md`).
 */
export function takeFeedbackAtDefault(): void {
  v8.setFlagsFromString('--invocation-count-for-feedback-allocation=8');
}
