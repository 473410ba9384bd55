import '../process/runtime-check';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Knex } from 'knex';
import { loadConfig } from '../config';
import { createLogger, flushLogs } from '../common/logger';
import { startInfrastructure } from '../process/infrastructure';
import type { Storage } from '../media/storage';
import { CatalogImportError, importCatalog, type ImportProgress, type ImportSummary } from '../services/catalog/import';

/**
 * `npm run import-catalog -- catalog.yaml`: imports or updates categories, tags, authors, effects
 * and studio categories from a JSON or YAML file (format: `CatalogDocument` in
 * services/catalog/import.ts; what runs an effect on Replicate and fal: docs/providers.md, with
 * docs/catalog-real-providers.yaml as a whole example). Media paths are relative to the file. Every
 * row is checked before anything is written; a bad row stops the whole import with one message per
 * problem, and nothing is half-written (see importCatalog).
 *
 * Example:
 *   categories: [{slug: portraits, name: {ru: Портреты, en: Portraits}, icon: "🖼️"}]
 *   tags: [{slug: winter, name: {ru: зима, en: winter}}]
 *   effects:
 *     - slug: winter-portrait
 *       name: {ru: Зимний портрет, en: Winter portrait}
 *       description: {ru: ..., en: ...}
 *       cost: 10
 *       characters: [{min_photos: 1, max_photos: 1}]
 *       model: image                  # the simulator's model; and/or a route per provider kind:
 *       runs:
 *         replicate: {model: black-forest-labs/flux-kontext-pro, input: {prompt: "a winter portrait", input_image: "{{photo}}"}}
 *       categories: [portraits, {slug: fun, pinned_top: 1}]
 *       tags: [winter]
 *       poster: media/winter.jpg
 *       clip: media/winter.mp4        # optional
 *       focus: {x: 0.5, y: 0.3}       # optional
 */

export class CatalogFileError extends Error {}

/** The parsed document of a `.json`, `.yaml` or `.yml` file. */
export async function readCatalogFile(file: string): Promise<unknown> {
  const text = await readFile(file, 'utf8').catch((error: Error) => {
    throw new CatalogFileError(`cannot read ${file}: ${error.message}`);
  });
  try {
    return /\.ya?ml$/i.test(file) ? parseYaml(text) : JSON.parse(text);
  } catch (error) {
    throw new CatalogFileError(`${file} is not valid ${/\.ya?ml$/i.test(file) ? 'YAML' : 'JSON'}: ${(error as Error).message}`);
  }
}

export async function importCatalogFile(
  services: { db: Knex; storage: Storage },
  file: string,
  onProgress?: (progress: ImportProgress) => void,
): Promise<ImportSummary> {
  const document = await readCatalogFile(file);
  const folder = path.dirname(path.resolve(file));
  return importCatalog(services.db, services.storage, document, {
    readMedia: (reference) => readFile(path.resolve(folder, reference)),
    onProgress,
  });
}

const stageNames: Record<ImportProgress['stage'], string> = { check: 'checking', previews: 'previews', write: 'writing' };

/** A progress bar on stderr: redrawn in place on a terminal, one line per finished stage otherwise. */
export function progressBar(stream: NodeJS.WriteStream = process.stderr): (progress: ImportProgress) => void {
  return (progress) => {
    const width = 30;
    const filled = progress.total ? Math.round((width * progress.done) / progress.total) : width;
    const line = `${stageNames[progress.stage].padEnd(9)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${progress.done}/${progress.total} ${progress.item ?? ''}`;
    const finished = progress.done >= progress.total;
    if (stream.isTTY) stream.write(`\r${line.padEnd(stream.columns ? Math.min(stream.columns - 1, 100) : 100)}${finished ? '\n' : ''}`);
    else if (finished) stream.write(`${line}\n`);
  };
}

async function main(): Promise<void> {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: npm run import-catalog -- <catalog.json|catalog.yaml>');
    process.exit(2);
  }
  const config = loadConfig();
  const log = createLogger(config.logLevel);
  // An import into an empty database must not be mixed with the demo catalog.
  const infrastructure = await startInfrastructure({ ...config, catalog: { ...config.catalog, seedDemo: false } }, log, { supervise: false, schedule: false });
  let exitCode = 0;
  try {
    const summary = await importCatalogFile(infrastructure.services, file, progressBar());
    console.log(`imported: ${summary.effectsCreated} effects created, ${summary.effectsUpdated} updated, ${summary.previewsBuilt} previews built, `
      + `${summary.categories} categories, ${summary.tags} tags, ${summary.authors} authors, ${summary.studioCategories} studio categories`);
  } catch (error) {
    if (!(error instanceof CatalogImportError || error instanceof CatalogFileError)) throw error;
    console.error(error.message);
    exitCode = 1;
  } finally {
    await infrastructure.stop();
    await flushLogs(log);
  }
  process.exit(exitCode);
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
