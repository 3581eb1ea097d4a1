// The page's one cache of hub objects, kept live by list-then-watch: every view subscribes to the
// collections it shows (a collection is one API path, e.g. all ManagedClusters, or the ManifestWorks
// of one cluster namespace) and re-renders when they change. One list and one watch per collection,
// however many views show it; no polling.
//
// A collection: list (paged), then watch from the list's resourceVersion with bookmarks; a watch that
// ends is resumed from the last resourceVersion seen, a 410 Gone (too old) lists again, a network
// failure retries with capped exponential backoff and jitter. A refused list (403, 404) is kept as
// the collection's error, so the view can say so, and retried slowly (rights may be granted). A
// collection nobody watches is stopped and dropped a moment later (see IDLE_KEEP_MS).
import { ApiFailure, apiGet, failureOf, failureOfStatus } from './api.ts';
import type { KubeObject } from './types.ts';
import { WatchLineParser } from './watch-stream.ts';

export interface CollectionState {
  items: readonly KubeObject[];
  /** loading: no list yet; ready: items are the list plus every change since; error: see error */
  phase: 'loading' | 'ready' | 'error';
  error?: ApiFailure;
  /** false while the watch is down and being retried (items may be stale) */
  live: boolean;
}

/** Objects per list page. */
const LIST_PAGE_SIZE = 500;
/** A failed list or watch is retried after this, doubling up to BACKOFF_MAX_MS (tunnel.ts too). */
export const BACKOFF_FIRST_MS = 1_000;
export const BACKOFF_MAX_MS = 30_000;
/** A watch that ends sooner than this without an event counts as a failure (backs off). */
const WATCH_MIN_HEALTHY_MS = 5_000;
/** The server ends each watch after this long (plus jitter, so many collections do not re-watch at once). */
const WATCH_TIMEOUT_SECONDS = 300;
/** A watch silent this much longer than its server timeout is taken for dead and re-opened. */
const WATCH_SILENCE_GRACE_MS = 30_000;
/**
 * How long a collection nobody subscribes to keeps its watch: only across a page change that
 * subscribes to it again. Each watch holds one of the six HTTP/1.1 connections a browser keeps per
 * host (the console is plain http on loopback: no HTTP/2), so the previous page's watches must go
 * before the next page's lists would queue behind them. A page watches at most five collections
 * (the placements page: four, plus the ManagedClusters of the availability history).
 */
const IDLE_KEEP_MS = 1_000;

class Gone extends Error {}

function keyOf(obj: KubeObject): string {
  return `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

function backoffMs(attempt: number): number {
  const base = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** attempt);
  return base / 2 + Math.random() * (base / 2);
}

function withQuery(path: string, query: string): string {
  return `${path}${path.includes('?') ? '&' : '?'}${query}`;
}

class Collection {
  readonly #path: string;
  readonly #objects = new Map<string, KubeObject>();
  readonly #listeners = new Set<() => void>();
  #state: CollectionState = { items: [], phase: 'loading', live: false };
  #resourceVersion: string | undefined;
  #abort: AbortController | undefined;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;
  #notifyQueued = false;

  constructor(path: string) {
    this.#path = path;
  }

  get state(): CollectionState {
    return this.#state;
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    clearTimeout(this.#idleTimer);
    if (!this.#abort) {
      this.#abort = new AbortController();
      void this.#run(this.#abort.signal);
    }
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.#idleTimer = setTimeout(() => this.#stop(), IDLE_KEEP_MS);
    };
  }

  #stop(): void {
    this.#abort?.abort();
    this.#abort = undefined;
    collections.delete(this.#path);
  }

  #update(patch: Partial<CollectionState>, itemsChanged: boolean): void {
    this.#state = {
      ...this.#state,
      ...patch,
      ...(itemsChanged ? { items: [...this.#objects.values()] } : {}),
    };
    if (this.#notifyQueued) return;
    this.#notifyQueued = true;
    queueMicrotask(() => {
      this.#notifyQueued = false;
      for (const listener of this.#listeners) listener();
    });
  }

  async #run(signal: AbortSignal): Promise<void> {
    let attempt = 0;
    while (!signal.aborted) {
      try {
        if (this.#resourceVersion === undefined) await this.#list(signal);
        const healthy = await this.#watch(signal);
        attempt = healthy ? 0 : attempt + 1;
        if (!healthy) await sleep(backoffMs(attempt), signal);
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof Gone) {
          this.#resourceVersion = undefined;
          continue;
        }
        if (err instanceof ApiFailure) {
          // refused or missing: say so instead of showing what may no longer be true
          this.#objects.clear();
          this.#resourceVersion = undefined;
          this.#update({ phase: 'error', error: err, live: false }, true);
        } else {
          this.#update({ live: false }, false);
        }
        attempt++;
        await sleep(backoffMs(attempt), signal);
      }
    }
  }

  async #list(signal: AbortSignal): Promise<void> {
    const objects: KubeObject[] = [];
    let next: string | undefined;
    let resourceVersion = '';
    do {
      const query = `limit=${LIST_PAGE_SIZE}${next ? `&continue=${encodeURIComponent(next)}` : ''}`;
      const response = await apiGet(withQuery(this.#path, query), signal);
      if (!response.ok) throw await failureOf(response);
      const list = (await response.json()) as {
        items?: KubeObject[];
        metadata?: { resourceVersion?: string; continue?: string };
      };
      objects.push(...(list.items ?? []));
      resourceVersion = list.metadata?.resourceVersion ?? '';
      next = list.metadata?.continue || undefined;
    } while (next);
    this.#objects.clear();
    for (const obj of objects) this.#objects.set(keyOf(obj), obj);
    this.#resourceVersion = resourceVersion;
    this.#update({ phase: 'ready', error: undefined, live: true }, true);
  }

  /**
   * Watches until the stream ends; true if it was healthy (lasted, or brought events). A stream
   * silent past the server's own timeout is aborted: a connection that died without a FIN (a
   * sleeping laptop, a dropped NAT entry) would otherwise hang here for ever.
   */
  async #watch(signal: AbortSignal): Promise<boolean> {
    const started = Date.now();
    let events = 0;
    const timeoutSeconds = WATCH_TIMEOUT_SECONDS + Math.floor(Math.random() * WATCH_TIMEOUT_SECONDS);
    const silence = new AbortController();
    const silenceMs = timeoutSeconds * 1000 + WATCH_SILENCE_GRACE_MS;
    let timer = setTimeout(() => silence.abort(), silenceMs);
    const query =
      `watch=1&allowWatchBookmarks=1&timeoutSeconds=${timeoutSeconds}` +
      `&resourceVersion=${encodeURIComponent(this.#resourceVersion ?? '')}`;
    try {
      await this.#stream(query, AbortSignal.any([signal, silence.signal]), () => {
        events++;
        clearTimeout(timer);
        timer = setTimeout(() => silence.abort(), silenceMs);
      });
      return events > 0 || Date.now() - started >= WATCH_MIN_HEALTHY_MS;
    } finally {
      clearTimeout(timer);
    }
  }

  /** One watch request: applies every event to the cache; `onData` on each chunk received. */
  async #stream(query: string, signal: AbortSignal, onData: () => void): Promise<void> {
    const response = await apiGet(withQuery(this.#path, query), signal);
    if (response.status === 410) throw new Gone();
    if (!response.ok) throw await failureOf(response);
    if (!response.body) throw new Error('watch response has no body');
    this.#update({ live: true }, false);
    const parser = new WatchLineParser();
    const reader = response.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (!done) onData();
        const batch = done ? parser.end() : parser.push(value);
        let changed = false;
        for (const event of batch) {
          if (event.type === 'ERROR') {
            if (event.object.code === 410) throw new Gone();
            throw failureOfStatus(event.object);
          }
          const obj = event.object as unknown as KubeObject;
          if (obj.metadata?.resourceVersion) this.#resourceVersion = obj.metadata.resourceVersion;
          if (event.type === 'BOOKMARK') continue;
          if (event.type === 'DELETED') this.#objects.delete(keyOf(obj));
          else this.#objects.set(keyOf(obj), obj);
          changed = true;
        }
        if (changed) this.#update({}, true);
        if (done) break;
      }
    } finally {
      // ends the request too when we stop early (an ERROR event, a broken line)
      await reader.cancel().catch(() => {});
    }
  }
}

const collections = new Map<string, Collection>();

function collectionOf(path: string): Collection {
  let c = collections.get(path);
  if (!c) {
    c = new Collection(path);
    collections.set(path, c);
  }
  return c;
}

/** Subscribes `listener` to the collection at `path` (starting it if needed); returns the unsubscribe. */
export function subscribe(path: string, listener: () => void): () => void {
  return collectionOf(path).subscribe(listener);
}

/** The collection's current state (loading until its first list). */
export function snapshot(path: string): CollectionState {
  return collections.get(path)?.state ?? { items: [], phase: 'loading', live: false };
}
