// Informer: a local cache of one kind kept current by list + watch, with add/update/delete events.
// Lists, then watches from the list's resourceVersion with client-node's Watch and bookmarks on.
// Watches end all the time and that is normal: the apiserver closes them at timeoutSeconds,
// connections drop. Like client-go's reflector, each watch asks for a timeoutSeconds drawn between
// 5 and 10 minutes (so that many informers do not restart together), and client-node's inactivity
// abort is moved a little past it (its 30 s default ended every quiet watch: 2.4 watch requests
// per minute per informer). A dead connection is still noticed in bounded time: the apiserver
// sends every watch a bookmark now and then (every minute at best; on a quiet kube-apiserver here
// 121 s apart, measured) and one just before timeoutSeconds, so a watch silent for
// silenceTimeoutMs (default 300 s, about two and a half of those gaps) is abandoned as a black hole; a watch whose response has not come within 30 s is too; and any other
// request that finds the server unreachable restarts the watches through server-health.ts (below).
// A watch that ended cleanly is resumed from the last resourceVersion seen (event or bookmark);
// one that failed is retried after a capped backoff, and one that cannot resume (410 Gone, an
// error before it was established, a second failure in a row) is replaced by a fresh list whose
// differences with the cache become events. Every resyncPeriodMs each cached object
// is handed to `update` again so controllers converge even if they missed something.
//
// Connectivity failures (no answer at all: refused, reset, timed out) are shared with every other
// client of the same apiserver through server-health.ts: the delay comes from that server's
// backoff, and the informer retries at once when the server is seen reachable again (a probe,
// another informer's list, watch or event). Requests that were in flight during the outage are
// not trusted to come back: on recovery an unfinished list or a watch not yet established is
// restarted, and so is an established watch that has carried nothing since the outage began
// (it resumes from its resourceVersion, nothing is lost).
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, errorMessage, TimeoutError } from '../errors.ts';
import { type Logger, logger } from '../log.ts';
import type { ResourceClient } from './resources.ts';
import { acquireServerHealth, type RetryWake, type ServerHealth } from './server-health.ts';
import type { KubeObject } from './types.ts';
import { judgeWatchEnd, runWatch, type WatchAttempt, type WatchOutcome } from './watch-attempt.ts';

export interface InformerHandlers<T> {
  add?(obj: T): void;
  update?(oldObj: T, newObj: T): void;
  /** `obj` is the last state the apiserver reported (or the cached one after a relist) */
  delete?(obj: T): void;
}

export interface InformerOptions {
  /** namespaced kinds: watch one namespace; leave out for all */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /**
   * abandon a watch that brought no event or bookmark for this long (default 300 s: the apiserver's
   * bookmarks to a quiet watch came 121 s apart here); a watch not answered at all is abandoned
   * after 30 s, or this if shorter
   */
  silenceTimeoutMs?: number;
  /** re-emit update for every cached object this often; 0 turns it off (default 10 min) */
  resyncPeriodMs?: number;
  /**
   * timeoutSeconds asked of the apiserver per watch (default: drawn between 300 and 600 for each
   * watch, as client-go's reflector does). The apiserver sends a bookmark just before it, so the
   * next watch resumes from a fresh resourceVersion. client-node's inactivity abort is set 30 s
   * past it.
   */
  watchTimeoutSeconds?: number;
  /**
   * first delay after a list or watch the apiserver refused (default 500 ms), doubling per
   * failure; connectivity failures use the server's shared backoff instead (server-health.ts)
   */
  backoffBaseMs?: number;
  /** cap of either backoff (default 30 s) */
  backoffMaxMs?: number;
  /**
   * reachability shared with the other clients of the same apiserver (default: the process-wide
   * one for the client's server URL and forward proxy)
   */
  serverHealth?: ServerHealth;
  /** for logs (default the resource's plural) */
  name?: string;
  log?: Logger;
}

/** "namespace/name", or "name" for cluster-scoped objects. */
export function objectKey(obj: KubeObject): string {
  const name = obj.metadata?.name ?? '';
  const namespace = obj.metadata?.namespace;
  return namespace ? `${namespace}/${name}` : name;
}

/** The namespace (undefined for cluster-scoped) and name in a key made by objectKey. */
export function splitKey(key: string): { namespace?: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** client-go's reflector: a watch's timeoutSeconds is drawn from [min, 2 × min), min 5 minutes. */
export const MIN_WATCH_TIMEOUT_SECONDS = 300;
/** A watch whose response (headers) has not come within this is abandoned (the old client-node bound). */
export const WATCH_RESPONSE_TIMEOUT_MS = 30_000;
/** How far past the asked timeoutSeconds client-node's inactivity abort is set. */
const WATCH_IDLE_MARGIN_MS = 30_000;

/** timeoutSeconds for one watch: `fixed`, or uniformly drawn from [300, 600). */
export function watchTimeoutSeconds(fixed?: number): number {
  return fixed ?? MIN_WATCH_TIMEOUT_SECONDS + Math.floor(Math.random() * MIN_WATCH_TIMEOUT_SECONDS);
}

export class Informer<T extends KubeObject = KubeObject> {
  private readonly client: ResourceClient<T>;
  private readonly options: InformerOptions;
  private readonly log: Logger;
  private readonly silenceTimeoutMs: number;
  private readonly resyncPeriodMs: number;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private cache = new Map<string, T>();
  private readonly handlers = new Set<InformerHandlers<T>>();
  private readonly syncWaiters = new Set<() => void>();
  private resourceVersion = '';
  private synced = false;
  private running?: Promise<void>;
  private abort = new AbortController();
  private current?: WatchAttempt;
  /** aborts the list in flight (when the server comes back after an outage) */
  private listing?: AbortController;
  /** failures in a row answered by the apiserver (connectivity failures use the server's backoff) */
  private refusals = 0;
  private releaseHealth?: () => void;
  private readonly recoveryListeners = new Set<() => void>();
  private resyncTimer?: NodeJS.Timeout;
  private watchesStarted = 0;

  constructor(client: ResourceClient<T>, options: InformerOptions = {}) {
    this.client = client;
    this.options = options;
    this.silenceTimeoutMs = options.silenceTimeoutMs ?? 300_000;
    this.resyncPeriodMs = options.resyncPeriodMs ?? 10 * 60_000;
    this.backoffBaseMs = options.backoffBaseMs ?? 500;
    this.backoffMaxMs = options.backoffMaxMs ?? 30_000;
    const name = options.name ?? client.descriptor.plural;
    this.log = options.log ?? logger('informer', { resource: name, namespace: options.namespace });
  }

  /** Register handlers; returns a function that removes them. Handlers must not throw. */
  addHandlers(handlers: InformerHandlers<T>): () => void {
    this.handlers.add(handlers);
    return () => this.handlers.delete(handlers);
  }

  /**
   * Call `listener` each time this informer's apiserver is reachable again after an outage (while
   * the informer runs), e.g. to retry work that failed meanwhile. Returns a function that removes it.
   */
  onServerRecovered(listener: () => void): () => void {
    this.recoveryListeners.add(listener);
    return () => this.recoveryListeners.delete(listener);
  }

  /** Start listing and watching (once; a stopped informer cannot be restarted). */
  start(): void {
    if (this.running || this.abort.signal.aborted) return;
    const health = this.acquireHealth();
    this.running = this.run(health);
    if (this.resyncPeriodMs > 0) this.resyncTimer = setInterval(() => this.resync(), this.resyncPeriodMs);
  }

  get isStarted(): boolean {
    return this.running !== undefined;
  }

  get isStopped(): boolean {
    return this.abort.signal.aborted;
  }

  /** Abort the watch, any list and backoff, clear timers; resolves when nothing is left running. */
  async stop(): Promise<void> {
    this.abort.abort();
    clearInterval(this.resyncTimer);
    this.current?.finish(undefined);
    for (const wake of this.syncWaiters) wake();
    await this.running;
    this.releaseHealth?.();
    this.releaseHealth = undefined;
  }

  /** Watch requests this informer has sent so far (each list is followed by one, and each resume). */
  get watchRequests(): number {
    return this.watchesStarted;
  }

  /** The first list has been loaded into the cache. */
  hasSynced(): boolean {
    return this.synced;
  }

  /**
   * Resolve once synced; TimeoutError after timeoutMs, when the informer is stopped first, or
   * when `signal` aborts (at once if it already has: an aborted signal fires no more 'abort').
   */
  async waitForSync(timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (this.synced) return;
    const what = `${this.options.name ?? this.client.descriptor.plural} informer`;
    if (this.abort.signal.aborted) throw new TimeoutError(`${what} was stopped before it synced`);
    if (signal?.aborted) throw new TimeoutError(`gave up waiting for ${what} to sync`);
    let wake = (): void => {};
    const woken = new Promise<void>((resolve) => {
      wake = resolve;
    });
    this.syncWaiters.add(wake);
    const timer = setTimeout(wake, timeoutMs);
    signal?.addEventListener('abort', wake);
    try {
      await woken;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', wake);
      this.syncWaiters.delete(wake);
    }
    if (this.synced) return;
    if (this.abort.signal.aborted) throw new TimeoutError(`${what} was stopped before it synced`);
    if (signal?.aborted) throw new TimeoutError(`gave up waiting for ${what} to sync`);
    throw new TimeoutError(`${what} did not sync within ${timeoutMs} ms: can this client list and watch it?`);
  }

  /** The cached object with this key (see objectKey). */
  get(key: string): T | undefined {
    return this.cache.get(key);
  }

  getByName(name: string, namespace?: string): T | undefined {
    return this.cache.get(namespace ? `${namespace}/${name}` : name);
  }

  /** Every cached object (a snapshot: later changes do not show up in it). */
  list(): T[] {
    return [...this.cache.values()];
  }

  keys(): string[] {
    return [...this.cache.keys()];
  }

  private acquireHealth(): ServerHealth {
    const given = this.options.serverHealth;
    let health: ServerHealth;
    let release: () => void;
    if (given) {
      given.retain();
      health = given;
      release = () => given.release();
    } else {
      ({ health, release } = acquireServerHealth(this.client.kubeconfig));
    }
    const stopListening = health.onRecovered((since) => this.restartAfterOutage(since));
    this.releaseHealth = () => {
      stopListening();
      release();
    };
    return health;
  }

  private async run(health: ServerHealth): Promise<void> {
    const signal = this.abort.signal;
    let needList = true;
    let failures = 0;
    while (!signal.aborted) {
      if (needList) {
        const listing = new AbortController();
        this.listing = listing;
        try {
          const list = await this.client.list({
            namespace: this.options.namespace,
            labelSelector: this.options.labelSelector,
            fieldSelector: this.options.fieldSelector,
            signal: AbortSignal.any([signal, listing.signal]),
          });
          this.listing = undefined;
          health.reportSuccess();
          this.refusals = 0;
          this.replace(list.items);
          this.resourceVersion = list.resourceVersion;
          needList = false;
          this.markSynced();
        } catch (err) {
          if (signal.aborted) break;
          if (listing.signal.aborted) {
            this.log.info('apiserver reachable again: restarting the list that was in flight');
            continue;
          }
          failures++;
          if ((await this.backOff(health, err, 'list failed', { failures })) === 'recovered') failures = 0;
          continue;
        } finally {
          if (this.listing === listing) this.listing = undefined;
        }
      }
      const { outcome, events, err } = await this.watchOnce(health);
      if (signal.aborted) break;
      if (events > 0) {
        failures = 0;
        this.refusals = 0;
      }
      if (outcome === 'resume') {
        // Resumed at once either way, but a watch that went quiet past client-node's inactivity
        // abort or our silence timeout is how a black hole looks: let the server's health probe.
        if (err !== undefined) health.reportFailure(err);
        continue;
      }
      if (outcome === 'relist' && events > 0) {
        // A healthy watch whose resourceVersion expired: relist at once.
        this.log.debug({ resourceVersion: this.resourceVersion }, 'watch expired: relisting');
        needList = true;
        continue;
      }
      failures++;
      const message = outcome === 'relist' ? 'watch cannot resume: relisting' : 'watch failed';
      const wake = await this.backOff(health, err, message, { failures });
      // The server came back: whatever failed was the outage, resuming is worth a try again.
      if (wake === 'recovered') failures = 0;
      // A second failure in a row means resuming does not work: start over from a list.
      needList = outcome === 'relist' || failures >= 2;
    }
  }

  /**
   * Wait before retrying a failed list or watch: a connectivity failure waits on the server's
   * shared backoff and wakes when the server is back; anything else on this informer's own.
   */
  private async backOff(
    health: ServerHealth,
    err: unknown,
    message: string,
    fields: Record<string, unknown>,
  ): Promise<RetryWake> {
    const errText = err === undefined ? undefined : errorMessage(err);
    const ticket = health.reportFailure(err);
    if (ticket) {
      const retryInMs = Math.min(ticket.delayMs, this.backoffMaxMs);
      this.log.warn({ ...fields, err: errText, retryInMs, serverRounds: health.failedRounds }, message);
      const wake = await health.waitForRetry(ticket, this.abort.signal, this.backoffMaxMs);
      if (wake === 'recovered') this.log.info('apiserver reachable again: retrying now');
      return wake;
    }
    this.refusals++;
    const retryInMs = this.backoff(this.refusals);
    this.log.warn({ ...fields, err: errText, retryInMs }, message);
    await this.pause(retryInMs);
    return 'elapsed';
  }

  /**
   * The server is reachable again after an outage that began at `outageStartedAt`: requests that
   * were in flight may hang on dead connections until their own timeouts, so restart them now.
   */
  private restartAfterOutage(outageStartedAt: number): void {
    if (this.abort.signal.aborted) return;
    // Which list is stuck cannot be told from outside: a list of several pages whose own page
    // brought the server back is restarted too (once per outage).
    this.listing?.abort();
    const attempt = this.current;
    if (attempt && !attempt.done && (!attempt.established || attempt.lastDataAt < outageStartedAt)) {
      this.log.info(
        { established: attempt.established },
        'apiserver reachable again: restarting a watch quiet since the outage began',
      );
      attempt.restarted = true;
      attempt.finish(undefined);
    }
    for (const listener of [...this.recoveryListeners]) {
      try {
        listener();
      } catch (err) {
        this.log.error({ err: errorMessage(err) }, 'server recovery listener threw');
      }
    }
  }

  /** One watch from this.resourceVersion, until it ends for whatever reason. */
  private async watchOnce(
    health: ServerHealth,
  ): Promise<{ outcome: WatchOutcome; events: number; err?: unknown }> {
    const timeoutSeconds = watchTimeoutSeconds(this.options.watchTimeoutSeconds);
    this.watchesStarted++;
    const { attempt, err } = await runWatch({
      kubeconfig: this.client.kubeconfig,
      path: this.client.collectionPath(this.options.namespace),
      query: {
        resourceVersion: this.resourceVersion || undefined,
        allowWatchBookmarks: true,
        timeoutSeconds,
        labelSelector: this.options.labelSelector,
        fieldSelector: this.options.fieldSelector,
      },
      responseTimeoutMs: WATCH_RESPONSE_TIMEOUT_MS,
      silenceTimeoutMs: this.silenceTimeoutMs,
      idleTimeoutMs: timeoutSeconds * 1000 + WATCH_IDLE_MARGIN_MS,
      onStart: (a) => {
        this.current = a;
      },
      onEvent: (phase, obj, a) => {
        health.reportSuccess();
        this.handleEvent(phase, obj, a);
      },
      onEstablished: () => health.reportSuccess(),
    });
    if (this.current === attempt) this.current = undefined;
    return { outcome: this.judge(attempt, err), events: attempt.events, err };
  }

  private judge(attempt: WatchAttempt, err: unknown): WatchOutcome {
    if (this.abort.signal.aborted) return 'resume';
    if (attempt.silenced && !attempt.restarted && !attempt.gone)
      this.log.info({ silenceMs: this.silenceTimeoutMs }, 'watch silent: restarting it');
    return judgeWatchEnd(attempt, err);
  }

  private handleEvent(phase: string, raw: unknown, attempt: WatchAttempt): void {
    const obj = raw as T & { code?: number; message?: string; reason?: string };
    if (phase === 'ERROR') {
      // A Status object: 410 Expired/Gone means our resourceVersion was compacted away.
      if (obj.code === 410) {
        attempt.gone = true;
        attempt.finish(
          new Error(`resourceVersion ${this.resourceVersion} expired: ${obj.message ?? '410 Gone'}`),
        );
      } else {
        const message = `watch error ${obj.code ?? ''} ${obj.reason ?? ''}: ${obj.message ?? ''}`;
        // The apiserver answered: an ApiError, so it never counts as the server being unreachable.
        attempt.finish(new ApiError(obj.code ?? 500, obj.reason ?? 'Unknown', message));
      }
      return;
    }
    attempt.events++;
    const rv = obj.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
    if (phase === 'BOOKMARK') return;
    const typed = this.withTypeMeta(obj);
    const key = objectKey(typed);
    const old = this.cache.get(key);
    if (phase === 'ADDED' || phase === 'MODIFIED') {
      this.cache.set(key, typed);
      if (old) this.emit((h) => h.update?.(old, typed));
      else this.emit((h) => h.add?.(typed));
    } else if (phase === 'DELETED') {
      this.cache.delete(key);
      this.emit((h) => h.delete?.(typed));
    }
  }

  /** Swap in a fresh list; what changed against the cache becomes add/update/delete events. */
  private replace(items: T[]): void {
    const next = new Map<string, T>();
    for (const item of items) next.set(objectKey(item), item);
    const previous = this.cache;
    this.cache = next;
    for (const [key, obj] of next) {
      const old = previous.get(key);
      if (!old) this.emit((h) => h.add?.(obj));
      else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion)
        this.emit((h) => h.update?.(old, obj));
    }
    for (const [key, old] of previous) {
      if (!next.has(key)) this.emit((h) => h.delete?.(old));
    }
  }

  private resync(): void {
    if (!this.synced || this.abort.signal.aborted) return;
    for (const obj of this.cache.values()) this.emit((h) => h.update?.(obj, obj));
  }

  private markSynced(): void {
    if (this.synced) return;
    this.synced = true;
    for (const wake of this.syncWaiters) wake();
  }

  private emit(call: (h: InformerHandlers<T>) => void): void {
    for (const h of this.handlers) {
      try {
        call(h);
      } catch (err) {
        this.log.error({ err: errorMessage(err) }, 'informer handler threw');
      }
    }
  }

  private withTypeMeta(obj: T): T {
    const { apiVersion = this.client.apiVersion, kind = this.client.descriptor.kind } = obj;
    return obj.apiVersion && obj.kind ? obj : { ...obj, apiVersion, kind };
  }

  private backoff(failures: number): number {
    const delay = Math.min(this.backoffBaseMs * 2 ** Math.min(failures - 1, 30), this.backoffMaxMs);
    return Math.round(delay * (0.8 + Math.random() * 0.4));
  }

  private async pause(ms: number): Promise<void> {
    try {
      await sleep(ms, undefined, { signal: this.abort.signal });
    } catch {
      // stopped
    }
  }
}
