import { startSharedInfrastructure, stopSharedInfrastructure } from './harness';

/** Mocha root hooks: one Postgres and one object store for the whole run. */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(120_000);
    await startSharedInfrastructure();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopSharedInfrastructure();
  },
};
