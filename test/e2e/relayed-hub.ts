// The shared hub apiserver reached through a TCP relay a test can cut, silence and restore, and a
// logger that keeps what a component logs so a test can wait for a log line (e.g. a long backoff).
import type { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { loadKubeconfig } from '../../src/kube/index.ts';
import { LOG_OPTIONS, type Logger } from '../../src/log.ts';
import { pollUntil } from '../../src/wait.ts';
import { startTcpRelay, type TcpRelay } from '../registration/agent/tcp-relay.ts';
import type { TestEnv } from './env.ts';

/** The hub admin kubeconfig, pointed at the hub apiserver through a relay; close the relay when done. */
export async function relayedHub(env: TestEnv): Promise<{ relay: TcpRelay; kc: KubeConfig }> {
  const relay = await startTcpRelay(env.hub.apiserverUrl);
  const kc = loadKubeconfig(env.hub.kubeconfigPath);
  kc.clusters = kc.clusters.map((c) => ({ ...c, server: relay.url }));
  return { relay, kc };
}

export interface LogLine {
  msg?: string;
  retryInMs?: number;
  [field: string]: unknown;
}

/** A debug-level logger (secrets redacted as everywhere) whose lines are kept, parsed, in `lines`. */
export function capturedLog(): { log: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const log = pino(
    { ...LOG_OPTIONS, level: 'debug' },
    { write: (line: string) => lines.push(JSON.parse(line)) },
  );
  return { log, lines };
}

/** Waits until a log line says its component will wait at least `ms` before the next try. */
export function longBackoff(lines: LogLine[], ms: number, what: string): Promise<LogLine> {
  return pollUntil(() => lines.find((l) => (l.retryInMs ?? 0) >= ms), {
    timeoutMs: 60_000,
    intervalMs: 50,
    description: `${what} to back off for ${ms} ms or more`,
  });
}

/** ms from `since` (performance.now()) until `check` holds, polling every 20 ms for up to 60 s. */
export async function msUntil(
  since: number,
  check: () => boolean | Promise<boolean>,
  description: string,
): Promise<number> {
  await pollUntil(check, { timeoutMs: 60_000, intervalMs: 20, description });
  return Math.round(performance.now() - since);
}
