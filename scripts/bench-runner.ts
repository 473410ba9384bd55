import { startScratchStack, type ScratchStack } from '../process/scratch-stack';

/** Runs a bench's `main` as the entry of its process: an error prints its stack and exits 1. */
export function runBenchMain(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}

/**
 * Runs a bench on a scratch stack of its own (`process/scratch-stack.ts`), stopped after it whatever
 * happens. Its options are read first (`readOptions`), so a wrong one stops it before the stack starts.
 */
export function runBench<Options = void>(bench: (stack: ScratchStack, options: Options) => Promise<void>, readOptions?: () => Options): void {
  runBenchMain(async () => {
    const options = readOptions?.() as Options;
    const stack = await startScratchStack();
    try {
      await bench(stack, options);
    } finally {
      await stack.stop();
    }
  });
}
