// The two halves of a watch soak: a WatchSet of N kubectl-style watches on one ConfigMap (each
// checks that it sees every update exactly once, in order, and records each event's delay), and an
// UpdateStream that writes numbered updates to that ConfigMap. A watch that ends early is reopened
// from the last resourceVersion it saw, as an informer would, and counted: a soak reports
// reconnects instead of hiding them. Parsing is per line of the JSON watch stream.
import type { Readable } from 'node:stream';
import { Pool } from 'undici';
import { nowMs } from './stats.ts';

/** mTLS (or plain TLS) details of one apiserver origin. */
export interface Origin {
  url: string;
  ca: string;
  cert: string;
  key: string;
  /** extra request headers (e.g. X-Remote-User when talking to the gateway port directly) */
  headers?: Record<string, string>;
}

/** A pool that holds `connections` HTTP/1.1 connections to `origin`; bodies never time out. */
export function originPool(origin: Origin, connections: number): Pool {
  return new Pool(origin.url, {
    connections,
    connect: { ca: origin.ca, cert: origin.cert, key: origin.key, servername: 'localhost' },
    bodyTimeout: 0,
    headersTimeout: 60_000,
  });
}

export interface WatcherState {
  /** next sequence number expected (1-based) */
  next: number;
  /** events that arrived as `next` */
  inOrder: number;
  /** events whose seq was already seen (duplicates) */
  duplicates: number;
  /** events that skipped ahead (sequence numbers missing before them) */
  gaps: number;
  /** the stream ended or failed and was reopened */
  reconnects: number;
  /** resourceVersion of the last event (reconnects resume here) */
  lastRv: string;
  /** first thing that went wrong, for messages */
  firstProblem?: string;
}

export interface WatchSetOptions {
  pool: Pool;
  /** `(resourceVersion) → path` of the watch (the caller adds the gateway prefix if any) */
  path: (resourceVersion: string) => string;
  count: number;
  /** resourceVersion the watches start after (the ConfigMap's, before the first update) */
  resourceVersion: string;
  /** sent time of update `seq` (UpdateStream.sentAt), for delays */
  sentAt: (seq: number) => number | undefined;
  headers?: Record<string, string>;
  /** watches opened at once (default 50) */
  openConcurrency?: number;
  /** give up opening one watch after (default 60 s of retries) */
  openTimeoutMs?: number;
}

interface Watcher {
  state: WatcherState;
  abort?: AbortController;
}

/** N watches on one object, each checking order and counting delays. */
export class WatchSet {
  readonly watchers: Watcher[] = [];
  /** delay of every in-order event, ms from the update's send to its arrival here */
  readonly delays: number[] = [];
  /** non-200 answers while opening, retried */
  openRetries = 0;
  private closing = false;
  private readonly opts: WatchSetOptions;

  constructor(opts: WatchSetOptions) {
    this.opts = opts;
  }

  /** Opens every watch; resolves with the time it took, once each has its response headers. */
  async open(): Promise<number> {
    const t0 = nowMs();
    const concurrency = this.opts.openConcurrency ?? 50;
    let i = 0;
    const worker = async (): Promise<void> => {
      while (i < this.opts.count) {
        const w: Watcher = {
          state: {
            next: 1,
            inOrder: 0,
            duplicates: 0,
            gaps: 0,
            reconnects: 0,
            lastRv: this.opts.resourceVersion,
          },
        };
        this.watchers[i++] = w;
        await this.start(w, true);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return nowMs() - t0;
  }

  /** Watches whose stream is open right now. */
  get openCount(): number {
    return this.watchers.filter((w) => w.abort && !w.abort.signal.aborted).length;
  }

  private async start(w: Watcher, first: boolean): Promise<void> {
    const deadline = Date.now() + (this.opts.openTimeoutMs ?? 60_000);
    for (;;) {
      if (this.closing) return;
      const abort = new AbortController();
      w.abort = abort;
      try {
        const res = await this.opts.pool.request({
          method: 'GET',
          path: this.opts.path(w.state.lastRv),
          headers: { accept: 'application/json', ...this.opts.headers },
          signal: abort.signal,
        });
        if (res.statusCode === 200) {
          this.consume(w, res.body);
          return;
        }
        const body = await res.body.text();
        this.noteProblem(w, `open: HTTP ${res.statusCode} ${body.slice(0, 200)}`);
      } catch (err) {
        if (this.closing) return;
        this.noteProblem(w, `open: ${(err as Error).message}`);
      }
      this.openRetries += 1;
      if (Date.now() > deadline) {
        throw new Error(
          `a watch did not open within ${this.opts.openTimeoutMs ?? 60_000} ms${first ? '' : ' (reconnect)'}: ${w.state.firstProblem}`,
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  private noteProblem(w: Watcher, what: string): void {
    w.state.firstProblem ??= what;
  }

  private consume(w: Watcher, body: Readable): void {
    let buf = '';
    const s = w.state;
    const onLine = (line: string): void => {
      if (!line.trim()) return;
      const at = nowMs();
      let ev: {
        type?: string;
        object?: { metadata?: { resourceVersion?: string }; data?: { seq?: string } };
      };
      try {
        ev = JSON.parse(line);
      } catch {
        this.noteProblem(w, `unparseable watch line: ${line.slice(0, 120)}`);
        return;
      }
      if (ev.type === 'BOOKMARK') return;
      if (ev.type !== 'MODIFIED') {
        this.noteProblem(w, `unexpected ${ev.type} event: ${line.slice(0, 200)}`);
        return;
      }
      s.lastRv = ev.object?.metadata?.resourceVersion ?? s.lastRv;
      const seq = Number(ev.object?.data?.seq);
      if (seq === s.next) {
        s.inOrder += 1;
        s.next += 1;
        const sent = this.opts.sentAt(seq);
        if (sent !== undefined) this.delays.push(at - sent);
      } else if (seq < s.next) {
        s.duplicates += 1;
        this.noteProblem(w, `seq ${seq} again after ${s.next - 1}`);
      } else {
        s.gaps += 1;
        this.noteProblem(w, `seq ${seq} while expecting ${s.next}`);
        s.next = seq + 1;
      }
    };
    body.on('data', (chunk: Buffer) => {
      buf += chunk.toString();
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        onLine(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        nl = buf.indexOf('\n');
      }
    });
    const ended = (why: string): void => {
      if (this.closing || w.abort?.signal.aborted) return;
      s.reconnects += 1;
      this.noteProblem(w, `stream ended early (${why}) after seq ${s.next - 1}`);
      void this.start(w, false).catch((err: Error) => this.noteProblem(w, err.message));
    };
    body.on('end', () => ended('end'));
    body.on('error', (err: Error) => ended(err.message));
  }

  /** Watchers that have seen update `seq` (and everything before it). */
  seenBy(seq: number): number {
    return this.watchers.filter((w) => w.state.next > seq).length;
  }

  /** Sums over all watchers. */
  totals(): { inOrder: number; duplicates: number; gaps: number; reconnects: number } {
    const t = { inOrder: 0, duplicates: 0, gaps: 0, reconnects: 0 };
    for (const { state } of this.watchers) {
      t.inOrder += state.inOrder;
      t.duplicates += state.duplicates;
      t.gaps += state.gaps;
      t.reconnects += state.reconnects;
    }
    return t;
  }

  /** The first watcher problems (index and what), at most `n`. */
  problems(n = 5): string[] {
    return this.watchers
      .map((w, i) => (w.state.firstProblem ? `watch ${i}: ${w.state.firstProblem}` : ''))
      .filter(Boolean)
      .slice(0, n);
  }

  /** Ends every watch (client side). */
  close(): void {
    this.closing = true;
    for (const w of this.watchers) w.abort?.abort();
  }
}

/** Numbered merge-patches (`data.seq` = 1, 2, …) to one ConfigMap, remembering when each was sent. */
export class UpdateStream {
  private readonly sent: number[] = [];
  private readonly pool: Pool;
  private readonly namespace: string;
  private readonly name: string;
  private readonly path: string;

  constructor(pool: Pool, namespace: string, name: string) {
    this.pool = pool;
    this.namespace = namespace;
    this.name = name;
    this.path = `/api/v1/namespaces/${namespace}/configmaps/${name}`;
  }

  /** Updates written so far. */
  get count(): number {
    return this.sent.length;
  }

  readonly sentAt = (seq: number): number | undefined => this.sent[seq - 1];

  /** Creates the ConfigMap; resolves with its resourceVersion (watches start after it). */
  async create(): Promise<string> {
    const { namespace, name } = this;
    const res = await this.pool.request({
      method: 'POST',
      path: `/api/v1/namespaces/${namespace}/configmaps`,
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ metadata: { name }, data: { seq: '0' } }),
    });
    const body = await res.body.text();
    if (res.statusCode !== 201)
      throw new Error(`create ConfigMap ${name}: HTTP ${res.statusCode} ${body.slice(0, 200)}`);
    return (JSON.parse(body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  }

  /** Writes the next update; resolves once the apiserver accepted it. */
  async next(): Promise<number> {
    const seq = this.sent.length + 1;
    this.sent.push(nowMs());
    const res = await this.pool.request({
      method: 'PATCH',
      path: this.path,
      headers: { 'content-type': 'application/merge-patch+json', accept: 'application/json' },
      body: JSON.stringify({ data: { seq: String(seq) } }),
    });
    const body = await res.body.text();
    if (res.statusCode !== 200)
      throw new Error(`update ${seq}: HTTP ${res.statusCode} ${body.slice(0, 200)}`);
    return seq;
  }
}
