#!/usr/bin/env -S node --disable-warning=ExperimentalWarning
// The tether command. Node >= 22.19 runs our TypeScript sources directly (type stripping).
import '../src/cli/main.ts';
