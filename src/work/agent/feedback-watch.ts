// `feedbackScrapeType: Watch`: instead of waiting for the periodic status sync, the agent watches
// each such resource on the managed cluster (one watch per object, by name) and reconciles its
// work as soon as the object changes, so status feedback and condition rules follow at once.
// Watches are kept per work and dropped when no work asks for them. The number of watches is
// capped (`feedbackWatchesMax`): resources beyond it are polled like Poll, and the work's
// Degraded condition says so. Owns the informers it starts.
import type { ResourceDescriptor } from '../../kube/index.ts';
import { Informer, type KubeObject } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import type { ManagedClients } from './clients.ts';

/** Most objects one agent watches for feedback. */
export const feedbackWatchesMax = 500;

export interface FeedbackWatchTarget {
  descriptor: ResourceDescriptor;
  namespace?: string;
  name: string;
}

interface Watch {
  informer: Informer<KubeObject>;
  works: Set<string>;
}

function keyOf(t: FeedbackWatchTarget): string {
  const d = t.descriptor;
  return `${d.group}/${d.version}/${d.plural}/${t.namespace ?? ''}/${t.name}`;
}

export class FeedbackWatcher {
  private readonly clients: ManagedClients;
  private readonly enqueue: (work: string) => void;
  private readonly log: Logger;
  private readonly watches = new Map<string, Watch>();
  private readonly byWork = new Map<string, Set<string>>();
  private readonly changed = new Set<string>();

  constructor(clients: ManagedClients, enqueue: (work: string) => void, log: Logger) {
    this.clients = clients;
    this.enqueue = enqueue;
    this.log = log;
  }

  /**
   * Watch exactly `targets` for `work` from now on (watches no work wants any more stop). Returns
   * the targets that could not be watched because of the cap.
   */
  set(work: string, targets: readonly FeedbackWatchTarget[]): FeedbackWatchTarget[] {
    const wanted = new Map(targets.map((t) => [keyOf(t), t]));
    const previous = this.byWork.get(work) ?? new Set<string>();
    for (const key of previous) {
      if (wanted.has(key)) continue;
      const watch = this.watches.get(key);
      watch?.works.delete(work);
      if (watch && watch.works.size === 0) {
        this.watches.delete(key);
        void watch.informer.stop();
      }
    }
    const kept = new Set<string>();
    const refused: FeedbackWatchTarget[] = [];
    for (const [key, target] of wanted) {
      let watch = this.watches.get(key);
      if (!watch) {
        if (this.watches.size >= feedbackWatchesMax) {
          refused.push(target);
          continue;
        }
        watch = { informer: this.start(key, target), works: new Set() };
        this.watches.set(key, watch);
      }
      watch.works.add(work);
      kept.add(key);
    }
    if (kept.size > 0) this.byWork.set(work, kept);
    else this.byWork.delete(work);
    return refused;
  }

  /** True (once) when a watched object of `work` changed since the last call. */
  takeChanged(work: string): boolean {
    return this.changed.delete(work);
  }

  async stop(): Promise<void> {
    const informers = [...this.watches.values()].map((w) => w.informer);
    this.watches.clear();
    this.byWork.clear();
    await Promise.all(informers.map((i) => i.stop()));
  }

  private start(key: string, target: FeedbackWatchTarget): Informer<KubeObject> {
    const informer = new Informer<KubeObject>(this.clients.forDescriptor(target.descriptor), {
      namespace: target.descriptor.namespaced ? target.namespace : undefined,
      fieldSelector: `metadata.name=${target.name}`,
      resyncPeriodMs: 0,
      name: `feedback ${key}`,
      log: this.log,
    });
    const notify = () => {
      for (const work of this.watches.get(key)?.works ?? []) {
        this.changed.add(work);
        this.enqueue(work);
      }
    };
    informer.addHandlers({ add: notify, update: notify, delete: notify });
    informer.start();
    return informer;
  }
}
