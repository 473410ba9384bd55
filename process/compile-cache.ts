import module from 'node:module';

/**
 * Imported by main.ts before anything else it loads: V8 keeps the code it compiled for each module
 * on disk (in the system's temporary directory, or NODE_COMPILE_CACHE) and the next start of any
 * role reads it instead of compiling again (docs/operations.md, "Process types and scaling").
 * A stale entry is never used (each is checked against its file's contents); where the directory
 * cannot be written, the process simply compiles as before. NODE_DISABLE_COMPILE_CACHE=1 turns it off.
 */
module.enableCompileCache();
