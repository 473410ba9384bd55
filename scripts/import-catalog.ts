import '../process/runtime-check';
import { loadEnvFileIfPresent } from '../process/env-file';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Knex } from 'knex';
import { loadConfig } from '../config';
import { createScriptLogger } from '../common/logger';
import { quantity } from '../common/plural';
import { startInfrastructure } from '../process/infrastructure';
import type { Storage } from '../media/storage';
import { CatalogImportError, importCatalog, type ImportProgress, type ImportSummary } from '../services/catalog/import';
import { runOperatorScript, UsageError } from './operator';

/**
 * `npm run import-catalog -- catalog.yaml`: imports or updates categories, tags, authors, effects
 * and studio categories from a JSON or YAML file (`CatalogDocument` in services/catalog/import.ts;
 * a complete example in docs/operations.md, routes to Replicate and fal in docs/providers.md).
 * Media paths are relative to the file. Every row is checked before anything is written: a bad
 * row stops the import with one message per problem.
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
    // The YAML parser's message goes on with an excerpt of the file over several lines: its first says what and where.
    const what = (error as Error).message.split('\n')[0].replace(/:$/, '');
    throw new CatalogFileError(`${file} is not valid ${/\.ya?ml$/i.test(file) ? 'YAML' : 'JSON'}: ${what}`);
  }
}

export async function importCatalogFile(
  services: { db: Knex; storage: Storage },
  file: string,
  onProgress?: (progress: ImportProgress) => void,
): Promise<ImportSummary> {
  return importCatalogDocument(services, file, await readCatalogFile(file), onProgress);
}

/** Imports the parsed document of `file`, its media paths relative to the file. */
function importCatalogDocument(
  services: { db: Knex; storage: Storage },
  file: string,
  document: unknown,
  onProgress?: (progress: ImportProgress) => void,
): Promise<ImportSummary> {
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
  const [file, ...extra] = process.argv.slice(2);
  if (!file || extra.length) throw new UsageError('name one catalog file: npm run import-catalog -- <catalog.json|catalog.yaml>');
  // Read before anything starts: a file that cannot be read or parsed fails at once.
  const document = await readCatalogFile(file);
  loadEnvFileIfPresent();
  const config = loadConfig();
  const log = createScriptLogger(config.logLevel);
  // An import into an empty database must not be mixed with the demo catalog.
  const infrastructure = await startInfrastructure({ ...config, catalog: { ...config.catalog, seedDemo: false } }, log, { supervise: false, schedule: false });
  try {
    const summary = await importCatalogDocument(infrastructure.services, file, document, progressBar());
    console.log(`imported: ${quantity(summary.effectsCreated, 'effect')} created, ${summary.effectsUpdated} updated, ${quantity(summary.previewsBuilt, 'preview')} built, `
      + `${quantity(summary.categories, 'category', 'categories')}, ${quantity(summary.tags, 'tag')}, ${quantity(summary.authors, 'author')}, `
      + `${quantity(summary.studioCategories, 'studio category', 'studio categories')}`);
  } finally {
    await infrastructure.stop();
  }
}

if (require.main === module) runOperatorScript('import-catalog', main, { refusals: [CatalogFileError, CatalogImportError] });
