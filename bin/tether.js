#!/usr/bin/env -S node --disable-warning=ExperimentalWarning
// The tether command. Node >= 22.19 runs our TypeScript sources directly (type stripping).
// Run through `npx tether` / `npm run`, it ends with its npm wrapper (src/cli/npm-wrapper.ts).
import { endWithNpmWrapper } from '../src/cli/npm-wrapper.ts';

endWithNpmWrapper();
await import('../src/cli/main.ts');
