// Applying one manifest of a ManifestWork to the managed cluster with its update strategy, and
// reading back the object that results. Update (default) creates the object, or replaces it when
// the spec hash annotation differs from the manifest's; CreateOnly never changes an existing one;
// ServerSideApply applies with a field manager and reports conflicts instead of forcing (and
// honours ignoreFields, see ignore-fields.ts);
// ReadOnly only reads, and so does any manifest a Complete condition rule marked complete. Ownership (the AppliedManifestWork ownerReference) follows the work's
// delete option. A manifest that fails reports it in its own outcome; nothing here throws for a
// single bad manifest. Owns no state besides what it is given.
import { createHash } from 'node:crypto';
import {
  configSpecHashAnnotation,
  type DeleteOption,
  DeletePropagationPolicy,
  defaultWorkFieldManager,
  type Manifest,
  type ManifestConfigOption,
  type ManifestResourceMeta,
  objectSpecHashAnnotation,
  UpdateStrategyType,
} from '../../api/index.ts';
import { errorMessage } from '../../errors.ts';
import {
  isAlreadyExists,
  isApplyConflict,
  isConflict,
  type KubeObject,
  type OwnerReference,
  type ResourceClient,
  type ResourceDescriptor,
} from '../../kube/index.ts';
import type { AgentBoundary } from './agent-boundary.ts';
import type { ManagedClients } from './clients.ts';
import { removeOwnerReference } from './deletion.ts';
import { type ManagedDiscovery, splitApiVersion } from './discovery.ts';
import type { ExecutorAuthorizer, ExecutorServiceAccount } from './executor.ts';
import { configSpecHash, IgnoreFieldError, onSpokePresent, withoutFields } from './ignore-fields.ts';

/** What is on the managed cluster after applying (or trying to). */
export type LiveState =
  | { state: 'present'; object: KubeObject }
  | { state: 'absent' }
  | { state: 'unknown'; message: string };

export interface ManifestOutcome {
  meta: ManifestResourceMeta;
  /** set once discovery resolved the kind */
  descriptor?: ResourceDescriptor;
  config?: ManifestConfigOption;
  strategy: UpdateStrategyType;
  /** why the manifest could not be applied (the Applied condition's message) */
  error?: string;
  /** the kind is not served (yet): a CRD in the same work may be on its way; retry soon */
  unknownKind?: boolean;
  /** a server-side apply conflict: retrying the same apply changes nothing */
  applyConflict?: boolean;
  /** complete: read back, not applied */
  completed?: boolean;
  /** the ignoreFields could not be applied (a bad pointer or path) */
  ignoreFieldError?: boolean;
  /** this pass created or replaced the object (Update and CreateOnly) */
  action?: 'created' | 'updated';
  live: LiveState;
}

export interface ApplyInput {
  ordinal: number;
  manifest: Manifest;
  configs: readonly ManifestConfigOption[];
  deleteOption: DeleteOption | undefined;
  owner: OwnerReference;
  /** the resource is not recorded as applied yet: try create before reading */
  likelyNew: boolean;
  /** the work's spec.executor ServiceAccount: applied only if it may (see executor.ts) */
  executor?: ExecutorServiceAccount;
  /** a Complete condition rule held for it (or the whole work): only read, never changed or recreated */
  completed?: boolean;
}

/** Metadata the apiserver owns; a manifest copied from a live object must not carry it. */
const serverOwnedMetadata = [
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'managedFields',
  'selfLink',
] as const;

/** Whether the work's delete option leaves the resource to the work (deleted with it). */
export function ownedByTheWork(
  deleteOption: DeleteOption | undefined,
  target: { group: string; resource: string; namespace?: string; name: string },
): boolean {
  const policy = deleteOption?.propagationPolicy ?? DeletePropagationPolicy.Foreground;
  if (policy === DeletePropagationPolicy.Foreground) return true;
  if (policy === DeletePropagationPolicy.Orphan) return false;
  const rules = deleteOption?.selectivelyOrphans?.orphaningRules ?? [];
  return !rules.some(
    (r) =>
      (r.group ?? '') === target.group &&
      r.resource === target.resource &&
      r.name === target.name &&
      (r.namespace ?? '') === (target.namespace ?? ''),
  );
}

/** The manifest config whose resourceIdentifier names this resource. */
export function findManifestConfig(
  meta: ManifestResourceMeta,
  configs: readonly ManifestConfigOption[],
): ManifestConfigOption | undefined {
  return configs.find(
    ({ resourceIdentifier: id }) =>
      (id.group ?? '') === (meta.group ?? '') &&
      id.resource === meta.resource &&
      id.name === meta.name &&
      (id.namespace ?? '') === (meta.namespace ?? ''),
  );
}

/** JSON with object keys sorted, so equal objects hash equally whatever their key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function specHashOf(obj: KubeObject): string {
  return createHash('sha256').update(canonicalJson(obj)).digest('hex');
}

function ownersWith(existing: readonly OwnerReference[] | undefined, owner: OwnerReference, owned: boolean) {
  const others = (existing ?? []).filter((o) => o.uid !== owner.uid);
  return owned ? [...others, owner] : others;
}

/** Applies manifests to the managed cluster. */
export class ManifestApplier {
  private readonly discovery: ManagedDiscovery;
  private readonly clients: ManagedClients;
  private readonly executors: ExecutorAuthorizer;
  private readonly boundary: AgentBoundary;

  constructor(
    discovery: ManagedDiscovery,
    clients: ManagedClients,
    executors: ExecutorAuthorizer,
    boundary: AgentBoundary,
  ) {
    this.discovery = discovery;
    this.clients = clients;
    this.executors = executors;
    this.boundary = boundary;
  }

  async apply(input: ApplyInput): Promise<ManifestOutcome> {
    const { manifest, ordinal } = input;
    const meta: ManifestResourceMeta = { ordinal };
    const fail = (error: string, extra: Partial<ManifestOutcome> = {}): ManifestOutcome => ({
      meta,
      strategy: UpdateStrategyType.Update,
      error,
      live: { state: 'unknown', message: error },
      ...extra,
    });
    if (!manifest || typeof manifest !== 'object' || Array.isArray(manifest)) {
      return fail('the manifest is not an object');
    }
    const { apiVersion, kind } = manifest;
    if (typeof apiVersion !== 'string' || !apiVersion || typeof kind !== 'string' || !kind) {
      return fail('the manifest needs apiVersion and kind');
    }
    const { group, version } = splitApiVersion(apiVersion);
    Object.assign(meta, { group, version, kind });
    const name = manifest.metadata?.name;
    const namespace = manifest.metadata?.namespace;
    if (namespace) meta.namespace = namespace;
    if (typeof name !== 'string' || !name) return fail('the manifest needs metadata.name');
    meta.name = name;

    let descriptor: ResourceDescriptor | undefined;
    try {
      descriptor = await this.discovery.resolve(apiVersion, kind);
    } catch (err) {
      return fail(`discovery failed: ${errorMessage(err)}`);
    }
    if (!descriptor) {
      return fail(`the server doesn't have a resource type "${kind}" in ${apiVersion}`, {
        unknownKind: true,
      });
    }
    meta.resource = descriptor.plural;
    if (!descriptor.namespaced) delete meta.namespace;
    else if (!namespace)
      return fail(`${kind} is namespaced: the manifest needs metadata.namespace`, { descriptor });

    let outOfBounds: string | undefined;
    try {
      outOfBounds = await this.boundary.refusal({
        group,
        resource: descriptor.plural,
        namespace: meta.namespace,
        name,
        labels: manifest.metadata?.labels,
      });
    } catch (err) {
      outOfBounds = `could not check the manifest's namespace: ${errorMessage(err)}`;
    }
    if (outOfBounds) return fail(outOfBounds, { descriptor });

    const config = findManifestConfig(meta, input.configs);
    const strategy = config?.updateStrategy?.type ?? UpdateStrategyType.Update;
    const owned = ownedByTheWork(input.deleteOption, {
      group,
      resource: descriptor.plural,
      namespace: meta.namespace,
      name,
    });
    if (input.executor) {
      let refusal: string | undefined;
      try {
        refusal = await this.executors.refusal(input.executor, {
          group,
          version,
          resource: descriptor.plural,
          namespace: meta.namespace,
          name,
          strategy,
          manifest,
        });
      } catch (err) {
        refusal = `could not check the executor's permissions: ${errorMessage(err)}`;
      }
      if (refusal) return fail(refusal, { descriptor, config, strategy });
    }
    const client = this.clients.forDescriptor(descriptor);
    const required = this.sanitize(manifest, descriptor);
    const target: Target = { client, name, namespace: meta.namespace, owner: input.owner, owned, required };
    const base = { meta, descriptor, config, strategy };
    try {
      if (input.completed) return { ...base, completed: true, live: await readLive(target) };
      switch (strategy) {
        case UpdateStrategyType.ReadOnly:
          return { ...base, live: await readLive(target) };
        case UpdateStrategyType.CreateOnly: {
          const live = await createOnly(target);
          return { ...base, action: target.action, live };
        }
        case UpdateStrategyType.ServerSideApply:
          return { ...base, ...(await serverSideApply(target, config)) };
        default: {
          const live = await update(target, input.likelyNew);
          return { ...base, action: target.action, live };
        }
      }
    } catch (err) {
      const live = await readLive(target).catch(unknown);
      const ignoreFieldError = err instanceof IgnoreFieldError ? { ignoreFieldError: true } : {};
      return { ...base, ...ignoreFieldError, error: errorMessage(err), live };
    }
  }

  /** A copy of the manifest without server-owned metadata (and without a namespace when cluster-scoped). */
  private sanitize(manifest: Manifest, descriptor: ResourceDescriptor): KubeObject & Record<string, unknown> {
    const copy = structuredClone(manifest) as KubeObject & Record<string, unknown>;
    const metadata: Record<string, unknown> = { ...(copy.metadata ?? {}) };
    for (const field of serverOwnedMetadata) delete metadata[field];
    if (!descriptor.namespaced) delete metadata.namespace;
    copy.metadata = metadata;
    delete copy.status;
    return copy;
  }
}

interface Target {
  client: ResourceClient<KubeObject>;
  name: string;
  namespace: string | undefined;
  owner: OwnerReference;
  owned: boolean;
  required: KubeObject;
  /** what this apply did to the object (for events) */
  action?: 'created' | 'updated';
}

const fieldManager = defaultWorkFieldManager;

function unknown(err: unknown): LiveState {
  return { state: 'unknown', message: errorMessage(err) };
}

async function readLive(t: Target): Promise<LiveState> {
  const obj = await t.client.get(t.name, t.namespace);
  return obj ? { state: 'present', object: obj } : { state: 'absent' };
}

function withOwner(t: Target, obj: KubeObject): KubeObject {
  const ownerReferences = ownersWith(obj.metadata?.ownerReferences, t.owner, t.owned);
  const { ownerReferences: _, ...rest } = obj.metadata ?? {};
  return { ...obj, metadata: ownerReferences.length > 0 ? { ...rest, ownerReferences } : rest };
}

/** Make the live object's ownerReferences agree with the delete option (add ours or drop it). */
async function reconcileOwner(t: Target, live: KubeObject): Promise<KubeObject> {
  const has = (live.metadata?.ownerReferences ?? []).some((o) => o.uid === t.owner.uid);
  if (has === t.owned) return live;
  if (!t.owned) return (await removeOwnerReference(t.client, live, t.owner.uid)) ?? live;
  const { resourceVersion } = live.metadata ?? {};
  const ownerReferences = ownersWith(live.metadata?.ownerReferences, t.owner, true);
  return t.client.patchMerge(t.name, { metadata: { resourceVersion, ownerReferences } }, t.namespace, {
    fieldManager,
  });
}

async function create(t: Target, obj: KubeObject): Promise<KubeObject | undefined> {
  try {
    return await t.client.create(obj, { fieldManager });
  } catch (err) {
    if (isAlreadyExists(err)) return undefined;
    throw err;
  }
}

async function update(t: Target, likelyNew: boolean): Promise<LiveState> {
  const desired = withOwner(t, t.required);
  const hash = specHashOf(desired);
  desired.metadata = {
    ...desired.metadata,
    annotations: { ...desired.metadata?.annotations, [objectSpecHashAnnotation]: hash },
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    let existing = likelyNew && attempt === 0 ? undefined : await t.client.get(t.name, t.namespace);
    if (!existing) {
      const created = await create(t, desired);
      if (created) {
        t.action = 'created';
        return { state: 'present', object: created };
      }
      existing = await t.client.get(t.name, t.namespace);
      if (!existing) continue;
    }
    if (existing.metadata?.annotations?.[objectSpecHashAnnotation] === hash) {
      return { state: 'present', object: existing };
    }
    // Labels and annotations others added survive; finalizers are the live object's business.
    const metadata = {
      ...desired.metadata,
      labels: { ...existing.metadata?.labels, ...desired.metadata?.labels },
      annotations: { ...existing.metadata?.annotations, ...desired.metadata?.annotations },
      ownerReferences: ownersWith(existing.metadata?.ownerReferences, t.owner, t.owned),
      finalizers: existing.metadata?.finalizers,
      resourceVersion: existing.metadata?.resourceVersion,
    };
    try {
      const replaced = await t.client.replace({ ...desired, metadata }, { fieldManager });
      t.action = 'updated';
      return { state: 'present', object: replaced };
    } catch (err) {
      if (!isConflict(err) || attempt >= 2) throw err;
    }
  }
  throw new Error(`${t.name} kept changing while it was being applied; will retry`);
}

async function createOnly(t: Target): Promise<LiveState> {
  const existing = await t.client.get(t.name, t.namespace);
  if (existing) return { state: 'present', object: await reconcileOwner(t, existing) };
  const created = await create(t, withOwner(t, t.required));
  if (created) {
    t.action = 'created';
    return { state: 'present', object: created };
  }
  const raced = await t.client.get(t.name, t.namespace);
  return raced ? { state: 'present', object: await reconcileOwner(t, raced) } : { state: 'absent' };
}

async function serverSideApply(
  t: Target,
  config: ManifestConfigOption | undefined,
): Promise<Pick<ManifestOutcome, 'live' | 'error' | 'applyConflict'>> {
  const ssa = config?.updateStrategy?.serverSideApply;
  const manager = ssa?.fieldManager || fieldManager;
  // Our ownerReference rides along: ownerReferences merge by uid, so others' entries stay.
  let body = t.owned ? withOwner(t, t.required) : t.required;
  const ignoreFields = ssa?.ignoreFields ?? [];
  if (ignoreFields.length > 0) {
    // Hash what is applied once the object exists; skip applying while the live object has it.
    const stripped = await withoutFields(body, onSpokePresent(ignoreFields));
    const hash = configSpecHash(stripped);
    const annotate = (o: KubeObject): KubeObject => ({
      ...o,
      metadata: {
        ...o.metadata,
        annotations: { ...o.metadata?.annotations, [configSpecHashAnnotation]: hash },
      },
    });
    const existing = await t.client.get(t.name, t.namespace);
    if (existing?.metadata?.annotations?.[configSpecHashAnnotation] === hash) {
      return { live: { state: 'present', object: await reconcileOwner(t, existing) } };
    }
    // Created whole; afterwards the OnSpokePresent fields are the managed cluster's.
    body = annotate(existing ? stripped : body);
  }
  try {
    const applied = await t.client.apply(body, { fieldManager: manager, force: ssa?.force ?? false });
    return { live: { state: 'present', object: await reconcileOwner(t, applied) } };
  } catch (err) {
    if (!isApplyConflict(err)) throw err;
    return { error: errorMessage(err), applyConflict: true, live: await readLive(t).catch(unknown) };
  }
}
