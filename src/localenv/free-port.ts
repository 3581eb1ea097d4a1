// Ports for the processes of a local environment and its tests, picked below the kernel's ephemeral
// range. A port the kernel picks for bind(0) comes from ip_local_port_range, the same range every
// outgoing connection on the machine draws its source port from: between freePort() closing its
// probe and the child binding the port, any client socket can take it (CI saw
// kube-controller-manager lose its secure port to a client's ephemeral port that way). Below the
// range only another explicit bind can take it; this process also never hands out a port twice.
// Kubernetes' NodePort range (30000–32767) is left alone too.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Lowest port handed out: above the registered ports most daemons default to. */
const LOW = 10_000;
/** Highest port + 1: below Kubernetes' default NodePort range. */
const NODE_PORT_RANGE_START = 30_000;
const ATTEMPTS = 64;

const handedOut = new Set<number>();

/** The first port of the kernel's ephemeral range (32768 when /proc does not say). */
export function ephemeralLow(rangeText?: string): number {
  let text = rangeText;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8');
    } catch {
      return 32_768;
    }
  }
  const low = Number(text.trim().split(/\s+/)[0]);
  return Number.isInteger(low) && low > 0 ? low : 32_768;
}

/** [from, to) of the ports freePort picks from, or undefined when the range leaves too few. */
export function pickRange(ephemeralStart: number): [number, number] | undefined {
  const to = Math.min(ephemeralStart, NODE_PORT_RANGE_START);
  return to - LOW >= 1_000 ? [LOW, to] : undefined;
}

const range = pickRange(ephemeralLow());

/** Resolves with `port` if it can be bound on 127.0.0.1 right now, undefined otherwise. */
function probe(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(undefined));
    srv.listen(port, '127.0.0.1', () => {
      const addr = srv.address();
      const bound = typeof addr === 'object' && addr ? addr.port : undefined;
      srv.close(() => resolve(bound));
    });
  });
}

/** A currently free TCP port on 127.0.0.1, outside the ephemeral range; the caller binds it soon after. */
export async function freePort(): Promise<number> {
  if (range) {
    const [from, to] = range;
    for (let i = 0; i < ATTEMPTS; i++) {
      const port = from + Math.floor(Math.random() * (to - from));
      if (handedOut.has(port)) continue;
      if ((await probe(port)) === port) {
        handedOut.add(port);
        return port;
      }
    }
  }
  // No room below the ephemeral range (or all tries taken): let the kernel pick, as before.
  const port = await probe(0);
  if (port === undefined) throw new Error('no free TCP port on 127.0.0.1');
  handedOut.add(port);
  return port;
}
