import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * Reads `.env` from the working directory into `process.env`, when there is one (`.env.example` is
 * the file to copy). Node's `loadEnvFile` sets only the variables the environment does not have, an
 * empty one included, so a deployment's environment always wins over the file. Call it before the
 * configuration is read. Answers the file it read, or null.
 */
export function loadEnvFileIfPresent(directory: string = process.cwd()): string | null {
  const file = path.join(directory, '.env');
  if (!existsSync(file)) return null;
  process.loadEnvFile(file);
  return file;
}
