// V8's `gc` function for a process started without `--expose-gc`: Node installs it only on a context
// created while that flag is set, so the flag is set for one new context and cleared again — the
// main context never gets a global `gc`. Two users: the idle trim (src/cli/idle-memory.ts: a full,
// memory-reducing collection) and the relay collector (src/tunnel/relay-gc.ts: a young-generation
// collection after many relayed bytes).
import v8 from 'node:v8';
import vm from 'node:vm';

export type GcOptions =
  | { type: 'major'; execution: 'sync'; flavor: 'last-resort' }
  | { type: 'minor'; execution: 'sync' };

let gc: ((opts: GcOptions) => void) | undefined;

/** V8's gc(), obtained once per process. */
export function v8Gc(): (opts: GcOptions) => void {
  if (!gc) {
    v8.setFlagsFromString('--expose-gc');
    try {
      gc = vm.runInNewContext('gc') as (opts: GcOptions) => void;
    } finally {
      v8.setFlagsFromString('--no-expose-gc');
    }
  }
  return gc;
}
