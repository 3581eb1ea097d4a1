#!/usr/bin/env -S node --disable-warning=ExperimentalWarning
// The tether command. Node >= 22.19 runs our TypeScript sources directly (type stripping).
// Run through `npx tether` / `npm run`, it ends with its npm wrapper (src/cli/npm-wrapper.ts).
// First: as PID 1 (the container image) a SIGTERM needs a handler before the rest loads.
import '../src/cli/pid1-signals.ts';
import { endWithNpmWrapper } from '../src/cli/npm-wrapper.ts';

endWithNpmWrapper();
await import('../src/cli/main.ts');
