// One watch request of an informer, from its start until it ends for whatever reason, and what its
// end means for the informer: resume from the last resourceVersion, relist, or back off and retry.
// The request is client-node's Watch; on top of it two timers: one abandons a watch whose response
// (the headers) has not come within responseTimeoutMs, the other an established watch that brought
// nothing (no event or bookmark) for silenceTimeoutMs. client-node's own inactivity abort is set to
// idleTimeoutMs (its default, 30 s, would end every quiet watch long before the apiserver does).
// Kept apart from informer.ts, which owns the cache, the list and the backoff around these attempts.
import { type KubeConfig, Watch } from '@kubernetes/client-node';
import { TimeoutError } from '../errors.ts';

export interface WatchAttempt {
  events: number;
  established: boolean;
  silenced: boolean;
  gone: boolean;
  /** ended by the informer because the server came back after an outage it may not have survived */
  restarted: boolean;
  done: boolean;
  startedAt: number;
  /** when the response headers or the last event arrived */
  lastDataAt: number;
  controller?: AbortController;
  finish(err: unknown): void;
}

/** resume: watch again from resourceVersion; relist: cannot resume; retry: failed, may resume. */
export type WatchOutcome = 'resume' | 'relist' | 'retry';

export interface WatchRequest {
  kubeconfig: KubeConfig;
  /** the collection path (…/namespaces/<ns>/<plural> or …/<plural>) */
  path: string;
  query: Record<string, string | number | boolean | undefined>;
  /** abandon the watch if the apiserver has not answered (headers) within this */
  responseTimeoutMs: number;
  /** abandon an established watch that brought no event or bookmark for this long */
  silenceTimeoutMs: number;
  /** client-node's inactivity abort (its Watch.requestTimeoutMs) */
  idleTimeoutMs: number;
  /** the attempt as soon as it exists, so that the caller can finish it early */
  onStart(attempt: WatchAttempt): void;
  /** every event (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR) while the attempt is open */
  onEvent(phase: string, obj: unknown, attempt: WatchAttempt): void;
  /** the apiserver answered 200: the watch is established */
  onEstablished(): void;
}

/** Runs one watch; resolves once it has ended, with the attempt and the error it ended with. */
export function runWatch(req: WatchRequest): Promise<{ attempt: WatchAttempt; err: unknown }> {
  return new Promise((resolve) => {
    let silenceTimer: NodeJS.Timeout | undefined;
    const armSilence = () => {
      clearTimeout(silenceTimer);
      const established = attempt.established;
      const ms = established ? req.silenceTimeoutMs : Math.min(req.responseTimeoutMs, req.silenceTimeoutMs);
      silenceTimer = setTimeout(() => {
        attempt.silenced = true;
        const err = established
          ? new TimeoutError(`watch silent for ${ms} ms`)
          : new TimeoutError(`watch got no response within ${ms} ms`);
        attempt.finish(err);
      }, ms);
    };
    const attempt: WatchAttempt = {
      events: 0,
      established: false,
      silenced: false,
      gone: false,
      restarted: false,
      done: false,
      startedAt: Date.now(),
      lastDataAt: 0,
      finish: (err: unknown) => {
        if (attempt.done) return;
        attempt.done = true;
        clearTimeout(silenceTimer);
        attempt.controller?.abort();
        resolve({ attempt, err });
      },
    };
    req.onStart(attempt);
    armSilence();
    const onEvent = (phase: string, obj: unknown) => {
      if (attempt.done) return;
      armSilence();
      attempt.lastDataAt = Date.now();
      req.onEvent(phase, obj, attempt);
    };
    const watch = new Watch(req.kubeconfig);
    // Declared private, but a plain instance field client-node reads on every reset of its timer.
    (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = req.idleTimeoutMs;
    watch
      .watch(req.path, req.query, onEvent, (err) => attempt.finish(err))
      .then((controller) => {
        // Resolves once the response headers are in (or after done() for a failed request).
        attempt.controller = controller;
        if (attempt.done) {
          controller.abort();
          return;
        }
        // A failed request resolves after finish(); only a 200 gets here with the attempt open.
        attempt.established = true;
        attempt.lastDataAt = Date.now();
        armSilence();
        req.onEstablished();
      })
      .catch((err: unknown) => attempt.finish(err));
  });
}

/** What an ended watch means (the informer checks for its own stop first). */
export function judgeWatchEnd(attempt: WatchAttempt, err: unknown): WatchOutcome {
  if (attempt.restarted) return 'resume';
  if (attempt.gone) return 'relist';
  if (attempt.silenced) return attempt.established ? 'resume' : 'relist';
  // client-node's inactivity abort of an established watch is a clean end, like the apiserver's.
  const inactivity = err instanceof Error && err.name === 'TimeoutError' && attempt.established;
  if (err && !inactivity) {
    if ((err as { statusCode?: number }).statusCode === 410) return 'relist';
    // Not even established: the request itself fails, resuming would fail the same way.
    return attempt.established ? 'retry' : 'relist';
  }
  // An empty watch that ended at once is a misbehaving path (a proxy closing it): back off.
  if (attempt.events === 0 && Date.now() - attempt.startedAt < 1000) return 'retry';
  return 'resume';
}
