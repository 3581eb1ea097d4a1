// What the placement benchmark reads from outside the placement hub: the hub kube-apiserver's
// /metrics (requests by verb and resource, open watches by resource) and a child process's CPU
// time from /proc (Linux), so the hub process is measured without running inside it.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Agent, request } from 'undici';
import type { ControlPlaneInfo } from '../../src/localenv/types.ts';

export interface ApiserverSample {
  /** apiserver_request_total by "VERB resource[/sub]" (codes merged) */
  requests: Map<string, number>;
  /** apiserver_longrunning_requests{verb="WATCH"} by resource: watches open right now */
  watches: Map<string, number>;
}

export const writeVerbs = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'DELETECOLLECTION', 'APPLY']);

/** A Prometheus text line's labels and value. */
export function labelsOf(line: string): { labels: Record<string, string>; value: number } {
  const close = line.lastIndexOf('}');
  const labels: Record<string, string> = {};
  for (const m of line.slice(0, close).matchAll(/(\w+)="([^"]*)"/g)) labels[m[1] ?? ''] = m[2] ?? '';
  return { labels, value: Number(line.slice(close + 1).trim()) };
}

/** The lines of one scrape of a control plane's /metrics, with its admin client certificate. */
export async function apiserverMetricLines(cp: ControlPlaneInfo): Promise<string[]> {
  const pki = dirname(cp.caCertPath);
  const dispatcher = new Agent({
    connect: {
      ca: readFileSync(cp.caCertPath, 'utf8'),
      cert: readFileSync(join(pki, 'admin.crt'), 'utf8'),
      key: readFileSync(join(pki, 'admin.key'), 'utf8'),
      servername: 'localhost',
    },
  });
  try {
    const res = await request(`${cp.apiserverUrl}/metrics`, { dispatcher });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`GET ${cp.name} /metrics: ${res.statusCode}`);
    return text.split('\n');
  } finally {
    await dispatcher.close();
  }
}

/** "VERB resource[/sub]" of an apiserver_request_total line's labels. */
export function verbResource(labels: Record<string, string>): string {
  const resource =
    (labels.resource || '(non-resource)') + (labels.subresource ? `/${labels.subresource}` : '');
  return `${labels.verb} ${resource}`;
}

/** Requests by verb and resource, and open watches, from one scrape. */
export async function scrapeApiserver(cp: ControlPlaneInfo): Promise<ApiserverSample> {
  const requests = new Map<string, number>();
  const watches = new Map<string, number>();
  for (const line of await apiserverMetricLines(cp)) {
    if (line.startsWith('apiserver_request_total{')) {
      const { labels, value } = labelsOf(line);
      const key = verbResource(labels);
      requests.set(key, (requests.get(key) ?? 0) + value);
    } else if (line.startsWith('apiserver_longrunning_requests{')) {
      const { labels, value } = labelsOf(line);
      if (labels.verb !== 'WATCH' || !labels.resource) continue;
      watches.set(labels.resource, (watches.get(labels.resource) ?? 0) + value);
    }
  }
  return { requests, watches };
}

/** after − before, entries that grew (counters) or changed (gauges, with `signed`). */
export function diffCounts(
  before: Map<string, number>,
  after: Map<string, number>,
  signed = false,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const k of new Set([...before.keys(), ...after.keys()])) {
    const d = (after.get(k) ?? 0) - (before.get(k) ?? 0);
    if (d > 0 || (signed && d !== 0)) out.set(k, d);
  }
  return out;
}

export function sumCounts(m: Map<string, number>, keep: (key: string) => boolean = () => true): number {
  let s = 0;
  for (const [k, v] of m) if (keep(k)) s += v;
  return s;
}

export function isWrite(key: string): boolean {
  return writeVerbs.has(key.slice(0, key.indexOf(' ')));
}

/** "a 3, b 2" largest first. */
export function formatCounts(m: Map<string, number>, limit = 12): string {
  const rows = [...m].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, limit);
  return rows.map(([k, v]) => `${k} ${v}`).join(', ') || '(none)';
}

/** User + system CPU seconds of a process so far, from /proc/<pid>/stat (clock ticks of 10 ms). */
export function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // the command name (field 2) may hold spaces: fields after the closing parenthesis
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return ticks / 100;
}
