// Removing what a ManifestWork applied: resources dropped from the work, and everything when the
// work (or its AppliedManifestWork) is deleted. Deletion is Foreground: an object stays (terminating)
// until the garbage collector removed its dependents (a Deployment's ReplicaSets and Pods), so the
// records, and the work's finalizer, outlive everything the work caused. A resource is deleted only when this
// AppliedManifestWork owns it and it is still the incarnation that was recorded (uid); when
// another AppliedManifestWork owns it too, only our ownerReference goes. Resources whose deletion
// is in progress (finalizers) are reported pending, so callers keep their records until the
// apiserver has really removed them. Owns no state.
import type { AppliedManifestResourceMeta } from '../../api/index.ts';
import { apiVersionOf, appliedManifestWorkResource } from '../../api/index.ts';
import { errorMessage } from '../../errors.ts';
import {
  isConflict,
  isNotFound,
  type KubeObject,
  type OwnerReference,
  type ResourceClient,
} from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import type { ManagedClients } from './clients.ts';

export interface DeletionResult {
  /** still there (terminating, or just asked to go): check again later */
  pending: AppliedManifestResourceMeta[];
  /** could not be handled this time (see errors): keep them recorded and try again */
  failed: AppliedManifestResourceMeta[];
  /** one message per failed resource */
  errors: string[];
  /** deleted by this call (for events) */
  deleted: AppliedManifestResourceMeta[];
}

const appliedWorkApiVersion = apiVersionOf(appliedManifestWorkResource);

/** True when `owners` holds an AppliedManifestWork other than `ownerUid`. */
export function hasOtherAppliedWorkOwner(
  owners: readonly OwnerReference[] | undefined,
  ownerUid: string,
): boolean {
  return (owners ?? []).some(
    (o) =>
      o.apiVersion === appliedWorkApiVersion &&
      o.kind === appliedManifestWorkResource.kind &&
      o.uid !== ownerUid,
  );
}

/**
 * Drop the ownerReference with `ownerUid` from `obj` (a conditional merge patch, retried once on a
 * stale read). Returns the updated object, or `obj` when there was nothing to drop.
 */
export async function removeOwnerReference(
  client: ResourceClient<KubeObject>,
  obj: KubeObject,
  ownerUid: string,
): Promise<KubeObject | undefined> {
  let current: KubeObject | undefined = obj;
  for (let attempt = 0; attempt < 3 && current; attempt++) {
    const owners = current.metadata?.ownerReferences ?? [];
    if (!owners.some((o) => o.uid === ownerUid)) return current;
    const { name = '', namespace, resourceVersion } = current.metadata ?? {};
    const remaining = owners.filter((o) => o.uid !== ownerUid);
    try {
      return await client.patchMerge(
        name,
        { metadata: { resourceVersion, ownerReferences: remaining.length > 0 ? remaining : null } },
        namespace,
      );
    } catch (err) {
      if (isNotFound(err)) return undefined;
      if (!isConflict(err)) throw err;
      current = await client.get(name, namespace);
    }
  }
  return current;
}

/** Delete (or disown) `resources` on behalf of the AppliedManifestWork `owner`. */
export async function deleteAppliedResources(
  resources: readonly AppliedManifestResourceMeta[],
  owner: OwnerReference,
  clients: ManagedClients,
  log: Logger,
): Promise<DeletionResult> {
  const result: DeletionResult = { pending: [], failed: [], errors: [], deleted: [] };
  for (const resource of resources) {
    const what = `${resource.resource}${resource.group ? `.${resource.group}` : ''} ${
      resource.namespace ? `${resource.namespace}/` : ''
    }${resource.name}`;
    try {
      const { pending, deleted } = await deleteOne(resource, owner, clients, log);
      if (pending) result.pending.push(resource);
      if (deleted) result.deleted.push(resource);
    } catch (err) {
      result.failed.push(resource);
      result.errors.push(`delete ${what}: ${errorMessage(err)}`);
    }
  }
  return result;
}

/** pending: the resource is still there and must be looked at again; deleted: this call deleted it. */
async function deleteOne(
  resource: AppliedManifestResourceMeta,
  owner: OwnerReference,
  clients: ManagedClients,
  log: Logger,
): Promise<{ pending: boolean; deleted: boolean }> {
  const skipped = { pending: false, deleted: false };
  const client = clients.forApplied(resource);
  const { name, namespace } = resource;
  const obj = await client.get(name, namespace);
  if (!obj) return skipped;
  const owners = obj.metadata?.ownerReferences;
  // Not ours (orphaned by the delete option, read-only, or taken over): leave it alone.
  if (!owners?.some((o) => o.uid === owner.uid)) return skipped;
  if (hasOtherAppliedWorkOwner(owners, owner.uid)) {
    await removeOwnerReference(client, obj, owner.uid);
    log.info(
      { resource: resource.resource, namespace, name },
      'another work still owns it: dropped our ownerReference',
    );
    return skipped;
  }
  // A different incarnation than the one we recorded is not ours to delete.
  if (resource.uid && obj.metadata?.uid !== resource.uid) return skipped;
  if (obj.metadata?.deletionTimestamp) return { pending: true, deleted: false };
  try {
    await client.delete(name, namespace, {
      propagationPolicy: 'Foreground',
      preconditions: { uid: obj.metadata?.uid },
    });
  } catch (err) {
    // Gone meanwhile, or the uid precondition failed (recreated by someone else).
    if (isNotFound(err) || isConflict(err)) return skipped;
    throw err;
  }
  log.info({ resource: resource.resource, namespace, name }, 'deleted applied resource');
  // Most objects go at once; look again so only those held by finalizers stay pending.
  const after = await client.get(name, namespace);
  return { pending: after !== undefined && after.metadata?.uid === obj.metadata?.uid, deleted: true };
}

/** OCM's ResourceDeleted event message. */
export function resourceDeletedMessage(r: AppliedManifestResourceMeta, because: string): string {
  return `Deleted resource ${r.group ?? ''}/${r.version}, Resource=${r.resource} with key ${r.namespace ?? ''}/${r.name} because ${because}.`;
}
