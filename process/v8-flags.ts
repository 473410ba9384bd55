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
