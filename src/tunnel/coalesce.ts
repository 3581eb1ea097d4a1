// Write coalescing for relays: the chunks one read batch delivers (a TLS read is up to four 16 KiB
// records, an HTTP/2 read as many DATA frames) are written to the destination with one writev
// instead of one write system call each. On a TCP socket every write is a segment the kernel
// sends and the receiver wakes up for; larger writes cost less per byte on both ends. The agent
// uses it towards its targets: agent CPU per GiB on the CONNECT frontend's bulk paths fell by
// 9-15 % (README, Performance). On the hub's relay it measured no gain and is not used.
import type { Readable, Writable } from 'node:stream';

/** Corks `dst` at the first chunk `src` delivers in a tick and uncorks it when the tick ends. */
export function coalesceWrites(src: Readable, dst: Writable): void {
  const uncork = (): void => dst.uncork();
  src.on('data', () => {
    if (dst.writableCorked === 0 && !dst.destroyed) {
      dst.cork();
      process.nextTick(uncork);
    }
  });
}
