// ManagedServiceAccountTtlReconciler: deletes a ManagedServiceAccount once creationTimestamp +
// spec.ttlSecondsAfterCreation has passed, and otherwise asks to run again exactly then. Deleting
// the MSA is all it does: the hub's garbage collector removes the token Secret (ownerReference) and
// the agent removes the ServiceAccount. Touches nothing but MSAs.
import type { ManagedServiceAccount } from '../../api/index.ts';
import type { Informer, ReconcileResult, ResourceClient } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';

/** The longest delay a Node timer takes (≈ 24.8 days); a later deadline is re-planned then. */
const maxRequeueMs = 2 ** 31 - 1;

/** When `msa` expires (ms since the epoch), or undefined when it has no TTL. */
export function expiresAtMs(msa: ManagedServiceAccount): number | undefined {
  const ttl = msa.spec?.ttlSecondsAfterCreation;
  const created = Date.parse(msa.metadata.creationTimestamp ?? '');
  if (ttl === undefined || ttl === null || !Number.isFinite(created)) return undefined;
  return created + ttl * 1000;
}

export class ManagedServiceAccountTtlReconciler {
  private readonly informer: Informer<ManagedServiceAccount>;
  private readonly client: ResourceClient<ManagedServiceAccount>;
  private readonly log: Logger;

  constructor(
    informer: Informer<ManagedServiceAccount>,
    client: ResourceClient<ManagedServiceAccount>,
    log: Logger,
  ) {
    this.informer = informer;
    this.client = client;
    this.log = log;
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const msa = this.informer.get(key);
    if (!msa || msa.metadata.deletionTimestamp) return undefined;
    const expiresAt = expiresAtMs(msa);
    if (expiresAt === undefined) return undefined;
    const remaining = expiresAt - Date.now();
    if (remaining > 0) return { requeueAfterMs: Math.min(Math.ceil(remaining), maxRequeueMs) };
    const uid = msa.metadata.uid;
    const deleted = await this.client.delete(msa.metadata.name ?? '', msa.metadata.namespace, {
      ignoreNotFound: true,
      ...(uid ? { preconditions: { uid } } : {}),
    });
    if (deleted) {
      const ttl = msa.spec?.ttlSecondsAfterCreation;
      this.log.info({ msa: key, ttlSecondsAfterCreation: ttl }, 'deleted ManagedServiceAccount: TTL passed');
    }
    return undefined;
  }
}
