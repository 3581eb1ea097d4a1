// AppliedManifestWork bookkeeping on the managed cluster: one per ManifestWork this agent applies,
// named `<sha256(hub apiserver URL)>-<work name>`, carrying the finalizer that makes the agent
// remove what it applied and `status.appliedResources` (what exists because of the work, with
// uids). Every applied resource is owned (non-controller ownerReference) by it. This module owns
// the AppliedManifestWork objects and their CRD; it never touches the resources themselves.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  type AppliedManifestResourceMeta,
  type AppliedManifestWork,
  apiVersionOf,
  appliedManifestWorkCrd,
  appliedManifestWorkFinalizer,
  appliedManifestWorkResource,
  crdNameOf,
} from '../../api/index.ts';
import {
  customResourceDefinitionResource,
  isAlreadyExists,
  isNotFound,
  type KubeObject,
  type OwnerReference,
  ResourceClient,
} from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { pollUntil } from '../../wait.ts';

export { hubHashOf } from '../../api/work.ts';

export function appliedWorkName(hubHash: string, workName: string): string {
  return `${hubHash}-${workName}`;
}

/** The ManifestWork name an AppliedManifestWork stands for, undefined when it is another hub's. */
export function workNameOf(appliedName: string, hubHash: string): string | undefined {
  const prefix = `${hubHash}-`;
  return appliedName.startsWith(prefix) && appliedName.length > prefix.length
    ? appliedName.slice(prefix.length)
    : undefined;
}

/** The ownerReference every resource applied for `applied` carries. */
export function ownerReferenceOf(applied: AppliedManifestWork): OwnerReference {
  return {
    apiVersion: apiVersionOf(appliedManifestWorkResource),
    kind: appliedManifestWorkResource.kind,
    name: applied.metadata.name ?? '',
    uid: applied.metadata.uid ?? '',
  };
}

/** Identity of an applied resource regardless of version and uid. */
export function appliedResourceKey(r: {
  group?: string;
  resource: string;
  namespace?: string;
  name: string;
}): string {
  return `${r.group ?? ''}/${r.resource}/${r.namespace ?? ''}/${r.name}`;
}

/** Stable order, so an unchanged list never causes a status write. */
export function sortAppliedResources(list: AppliedManifestResourceMeta[]): AppliedManifestResourceMeta[] {
  return [...list].sort((a, b) => {
    const ka = `${a.group ?? ''}\0${a.version}\0${a.resource}\0${a.namespace ?? ''}\0${a.name}`;
    const kb = `${b.group ?? ''}\0${b.version}\0${b.resource}\0${b.namespace ?? ''}\0${b.name}`;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
}

type CrdObject = KubeObject & { status?: { conditions?: { type: string; status: string }[] } };

/** Create the AppliedManifestWork CRD when the managed cluster lacks it, and wait until it is served. */
export async function ensureAppliedManifestWorkCrd(
  kc: KubeConfig,
  log: Logger,
  timeoutMs = 60_000,
): Promise<void> {
  const crds = new ResourceClient<CrdObject>(kc, customResourceDefinitionResource);
  const name = crdNameOf(appliedManifestWorkResource);
  const established = (crd: CrdObject | undefined) =>
    crd?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
  const existing = await crds.get(name);
  if (established(existing)) return;
  if (!existing) {
    log.info({ crd: name }, 'installing the AppliedManifestWork CRD');
    try {
      await crds.create(appliedManifestWorkCrd() as unknown as CrdObject);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }
  await pollUntil(async () => established(await crds.get(name)), {
    timeoutMs,
    intervalMs: 100,
    description: `CRD ${name} to be Established`,
  });
}

/** Reads and writes this agent's AppliedManifestWorks. */
export class AppliedWorkStore {
  readonly client: ResourceClient<AppliedManifestWork>;
  readonly hubHash: string;
  readonly agentId: string;

  constructor(kc: KubeConfig, hubHash: string, agentId: string) {
    this.client = new ResourceClient<AppliedManifestWork>(kc, appliedManifestWorkResource);
    this.hubHash = hubHash;
    this.agentId = agentId;
  }

  nameFor(workName: string): string {
    return appliedWorkName(this.hubHash, workName);
  }

  get(workName: string): Promise<AppliedManifestWork | undefined> {
    return this.client.get(this.nameFor(workName));
  }

  /**
   * The AppliedManifestWork for `workName`, created when missing, and made ours: our agent ID,
   * our finalizer, no eviction mark (its ManifestWork exists again).
   */
  async ensure(workName: string, cached: AppliedManifestWork | undefined): Promise<AppliedManifestWork> {
    let applied = cached;
    if (!applied) {
      try {
        return await this.client.create({
          metadata: { name: this.nameFor(workName), finalizers: [appliedManifestWorkFinalizer] },
          spec: { hubHash: this.hubHash, manifestWorkName: workName, agentID: this.agentId },
        });
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        applied = await this.get(workName);
        if (!applied) throw err;
      }
    }
    const finalizers = applied.metadata.finalizers ?? [];
    if (applied.spec.agentID !== this.agentId || !finalizers.includes(appliedManifestWorkFinalizer)) {
      applied = await this.client.patchMerge(applied.metadata.name ?? '', {
        metadata: {
          resourceVersion: applied.metadata.resourceVersion,
          finalizers: finalizers.includes(appliedManifestWorkFinalizer)
            ? finalizers
            : [...finalizers, appliedManifestWorkFinalizer],
        },
        spec: { agentID: this.agentId },
      });
    }
    if (applied.status?.evictionStartTime) {
      applied = await this.client.patchStatus(applied.metadata.name ?? '', {
        status: { evictionStartTime: null },
      });
    }
    return applied;
  }

  /** Record what exists because of the work (the list is written whole). */
  setAppliedResources(
    applied: AppliedManifestWork,
    resources: AppliedManifestResourceMeta[],
  ): Promise<AppliedManifestWork> {
    return this.client.patchStatus(applied.metadata.name ?? '', { status: { appliedResources: resources } });
  }

  /** Start the eviction grace period of an AppliedManifestWork whose ManifestWork is gone. */
  markEviction(applied: AppliedManifestWork, at: string): Promise<AppliedManifestWork> {
    return this.client.patchStatus(applied.metadata.name ?? '', { status: { evictionStartTime: at } });
  }

  /** Ask for deletion; the finalizer keeps the object until removeFinalizer. */
  async delete(applied: AppliedManifestWork): Promise<void> {
    await this.client.delete(applied.metadata.name ?? '', undefined, {
      ignoreNotFound: true,
      preconditions: { uid: applied.metadata.uid },
    });
  }

  /** Let the object go (after its resources are gone). */
  async removeFinalizer(applied: AppliedManifestWork): Promise<void> {
    const finalizers = applied.metadata.finalizers ?? [];
    if (!finalizers.includes(appliedManifestWorkFinalizer)) return;
    try {
      await this.client.patchMerge(applied.metadata.name ?? '', {
        metadata: {
          resourceVersion: applied.metadata.resourceVersion,
          finalizers: finalizers.filter((f) => f !== appliedManifestWorkFinalizer),
        },
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
