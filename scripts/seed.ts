import '../process/runtime-check';
import { loadEnvFileIfPresent } from '../process/env-file';
import { loadConfig } from '../config';
import { createScriptLogger } from '../common/logger';
import { quantity } from '../common/plural';
import { startInfrastructure } from '../process/infrastructure';
import { seedDemoCatalog } from '../services/catalog/demo-catalog';
import { seedStudioCategories } from '../db/studio/seed-studio-categories';
import { runOperatorScript } from './operator';

/**
 * `npm run seed`: puts the demo catalog (docs/mobile.md, "The demo catalog: what to try") and the demo studio categories
 * (7.3) into the configured or embedded database, whether or not it is empty; effects and studio
 * categories are matched by slug, so nothing is duplicated.
 */
async function main(): Promise<void> {
  loadEnvFileIfPresent();
  const config = loadConfig();
  const log = createScriptLogger(config.logLevel);
  // Seeding on start is switched off here: this script seeds itself, and reports what it did.
  const infrastructure = await startInfrastructure({ ...config, catalog: { ...config.catalog, seedDemo: false } }, log, { supervise: false, schedule: false });
  try {
    const started = Date.now();
    const summary = await seedDemoCatalog(infrastructure.services.db, infrastructure.services.storage);
    console.log(`demo catalog: ${quantity(summary.effectsCreated, 'effect')} created, ${summary.effectsUpdated} updated, `
      + `${quantity(summary.previewsBuilt, 'preview')} built, ${quantity(summary.categories, 'category', 'categories')}, ${quantity(summary.tags, 'tag')} (${Date.now() - started} ms)`);
    const studio = await seedStudioCategories(infrastructure.services.db, { onlyIntoEmpty: false });
    console.log(`demo studio categories: ${studio ? 'missing ones added' : 'all present'}`);
  } finally {
    await infrastructure.stop();
  }
}

runOperatorScript('seed', main);
