import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * Reads `.env` from the working directory into `process.env`, when there is one (`.env.example` is
 * the file to copy), or the file `ENV_FILE` names; `ENV_FILE=off` reads none (the processes that
 * tests and benchmarks start, whose environment is all they should see). Node's `loadEnvFile` sets
 * only the variables the environment does not have, an empty one included, so a deployment's
 * environment always wins over the file. Call it before the configuration is read. Answers the file
 * it read, or null.
 */
export function loadEnvFileIfPresent(directory: string = process.cwd()): string | null {
  const named = process.env.ENV_FILE?.trim();
  if (named === 'off') return null;
  const file = named ? path.resolve(directory, named) : path.join(directory, '.env');
  if (!existsSync(file)) return null;
  process.loadEnvFile(file);
  return file;
}
