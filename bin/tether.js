#!/usr/bin/env -S node --disable-warning=ExperimentalWarning
// The tether command. Node >= 22.19 runs our TypeScript sources directly (type stripping).
// Run through `npx tether` / `npm run`, it ends with its npm wrapper (src/cli/npm-wrapper.ts).
import { enableCompileCache } from 'node:module';

// Node keeps what it compiled (and the TypeScript it stripped) in its compile cache ($TMPDIR, or
// NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1 turns it off; a read-only disk just disables it).
// Enabled before the first .ts file loads: with a warm cache the type stripper is never loaded
// (about 18 MB of RSS) and a start compiles nothing (about a third less CPU).
enableCompileCache();
// Next: as PID 1 (the container image) a SIGTERM needs a handler before the rest loads.
await import('../src/cli/pid1-signals.ts');
const { endWithNpmWrapper } = await import('../src/cli/npm-wrapper.ts');
endWithNpmWrapper();
await import('../src/cli/main.ts');
