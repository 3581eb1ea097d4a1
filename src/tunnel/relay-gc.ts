// A young-generation collection after every few MiB a relay moved. Hand-written because V8 has no
// trigger for it: a relay allocates one ArrayBuffer per read (a TLS record, a TCP read, a copy of
// HTTP/2 frames) and little JS heap besides, so the young generation fills slowly (a scavenge every
// ~90 MB relayed at 300 MB/s) while the dead buffers' memory piles up outside it. That memory
// counts against the heap's global limit (src/node-flags.ts), and once a process has run a full
// collection — the idle trim runs one, so does V8's memory reducer after a quiet spell — that limit
// is small again (live heap × growth factor), and V8 answers the pile-up with mark-compacts of the
// whole heap: `--trace-gc` on a benchmark agent that had idled after holding 10 000 streams showed a
// mark-compact every ~150 ms under load, 3.1–3.6 s of agent CPU per GiB against 1.8–2.1 on a fresh
// process. A scavenge frees those dead buffers cheaply (the young generation holds little that
// lives), so every RELAY_GC_EVERY_BYTES the relays pass on (counted where bytes enter or leave a
// tunnel: the agent's session socket, the hub's frontends) one runs, outside the I/O callback that
// noticed, at most one pending at a time. Idle, nothing runs. Measured alternately (`bench tunnel
// --only=idle,bulk-100,frontend-bulk-1`, agent CPU per GiB): off 3.09 / 2.94, 16 MiB 2.67 / 2.02
// (`--trace-gc`: 11 mark-compacts left), 8 MiB 1.80 / 2.06 (1 left; one tunnel 488–499 MB/s against
// 340–351 off); on a fresh process 8 MiB changed nothing (agent 1.75–1.81 against 1.77–2.05 s/GiB).
import { v8Gc } from '../v8-gc.ts';

/** Relayed bytes after which the young generation is collected. */
export const RELAY_GC_EVERY_BYTES = 8 * 1024 * 1024;

let everyBytes = RELAY_GC_EVERY_BYTES;
let counted = 0;
let scheduled = false;

function collect(): void {
  scheduled = false;
  counted = 0;
  v8Gc()({ type: 'minor', execution: 'sync' });
}

/** Counts `n` bytes a relay passed on; schedules a young-generation collection every everyBytes. */
export function noteRelayedBytes(n: number): void {
  counted += n;
  if (counted < everyBytes || scheduled) return;
  scheduled = true;
  setImmediate(collect);
}

/** Sets how many relayed bytes trigger a collection (tests; Infinity turns it off). */
export function setRelayGcEveryBytes(bytes: number): void {
  everyBytes = bytes;
  counted = 0;
}

/** Counts what flows through the given relayed streams (each already flowing, e.g. piped). */
export function countRelayed(
  ...streams: Array<{ on(event: 'data', fn: (chunk: Buffer) => void): unknown }>
): void {
  for (const s of streams) s.on('data', (chunk: Buffer) => noteRelayedBytes(chunk.length));
}
