import { ConfigError } from '../config';

/**
 * What every operator script (`npm run migrate`, `seed`, `import-catalog`, `replay-failed`,
 * `user-effects`) shares: stdout carries its result and nothing else, so `> file` and pipes work;
 * the logs of the infrastructure it starts (`createScriptLogger`), its progress and its failure go
 * to stderr. A failure it expects (a bad argument, an unreadable file, a refused import, a bad
 * setting) is one line naming the script, without a stack trace, and a non-zero exit: 2 for a
 * mistake in the command line, 1 otherwise. Only an unexpected error shows its stack.
 */

/** A mistake in the command line: exit 2. */
export class UsageError extends Error {}

/** A refusal the script states in its own words (nothing to do, nothing found): exit 1. */
export class ScriptFailure extends Error {}

type ErrorClass = abstract new (...args: never[]) => Error;

export interface ExpectedFailures {
  /** Further errors that mean a mistake in the command line (exit 2). */
  usage?: ErrorClass[];
  /** Further errors that are refusals, not faults (exit 1). */
  refusals?: ErrorClass[];
  /** The script answers `--help`: a usage mistake says so. */
  help?: boolean;
}

/** Runs `main` (its answer is the exit code, 0 when none) and exits; see above for failures. */
export function runOperatorScript(name: string, main: () => Promise<number | void>, expected: ExpectedFailures = {}): void {
  const isAny = (error: unknown, classes: ErrorClass[]) => classes.some((kind) => error instanceof kind);
  main().then((code) => process.exit(code ?? 0), (error: unknown) => {
    if (isAny(error, [UsageError, ...(expected.usage ?? [])])) {
      // Node's argument parser explains some mistakes over several lines.
      const message = (error as Error).message.replace(/\s*\n\s*/g, ' ');
      process.stderr.write(`${name}: ${message}${expected.help ? ` (npm run ${name} -- --help shows the usage)` : ''}\n`);
      process.exit(2);
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`${name}: configuration error: ${error.message}\n`);
      process.exit(1);
    }
    const refusal = isAny(error, [ScriptFailure, ...(expected.refusals ?? [])]);
    process.stderr.write(`${name}: ${refusal ? (error as Error).message : (error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  });
}
