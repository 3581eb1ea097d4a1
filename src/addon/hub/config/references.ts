// Which configs an add-on uses on one cluster, as OCM's addon-manager decides it, and how they are
// written into ManagedClusterAddOn status.configReferences. Pure functions, no I/O.
//   - desired configs: the ClusterManagementAddOn's defaults (supportedConfigs[].defaultConfig),
//     replaced per group/resource by the configs of the install strategy's placement the cluster
//     falls in, replaced per group/resource by the ManagedClusterAddOn's own spec.configs;
//   - a config kind the ClusterManagementAddOn does not list in supportedConfigs is refused (never
//     resolved, never written) and reported through the Configured condition;
//   - specHash: sha256 (lowercase hex) of the referenced object without apiVersion, kind, metadata
//     and status, JSON-encoded as Go's encoding/json does (keys sorted, <, >, & escaped), so a hash
//     written here equals the one OCM's own addon-manager writes for the same object.
// Owns: desiredConfig (name, namespace, specHash), name/namespace (deprecated, kept in step) and
// lastObservedGeneration of status.configReferences[], and the Configured condition. Keeps
// lastAppliedConfig, which the deploy controller writes once the agent runs with the config.
import { createHash } from 'node:crypto';
import {
  type AddOnConfig,
  addOnDeploymentConfigResource,
  type ClusterManagementAddOn,
  type ConfigReference,
  type ConfigReferent,
  type ConfigSpecHash,
  reservedNoDefaultConfigName,
} from '../../../api/addon.ts';
import { canonicalJson } from '../../../kube/canonical-json.ts';
import type { ConditionUpdate } from '../../../kube/index.ts';

/** The ManagedClusterAddOn condition this module owns (deprecated in OCM, still written by it). */
export const configuredCondition = 'Configured';

/** OCM's reasons for Configured, plus the refusal of a config kind the add-on does not support. */
export const ConfiguredReason = {
  Configured: 'ConfigurationsConfigured',
  NotConfigured: 'ConfigurationsNotConfigured',
  /** OCM reports this reason on Progressing; here the refusal is the config manager's own verdict */
  Unsupported: 'ConfigurationUnsupported',
} as const;

export const configuredTrue: ConditionUpdate = {
  type: configuredCondition,
  status: 'True',
  reason: ConfiguredReason.Configured,
  message: 'Configurations configured',
};

export const configuredWaiting: ConditionUpdate = {
  type: configuredCondition,
  status: 'False',
  reason: ConfiguredReason.NotConfigured,
  message: 'Configurations updated and not configured yet',
};

/** Configured=False for config kinds the add-on does not accept (OCM's wording, one line per kind). */
export function configuredUnsupported(kinds: readonly GroupResource[]): ConditionUpdate {
  return {
    type: configuredCondition,
    status: 'False',
    reason: ConfiguredReason.Unsupported,
    message: kinds
      .map((k) => `Configuration with gvr ${k.group}/${k.resource} is not supported for this addon`)
      .join('; '),
  };
}

export interface GroupResource {
  group: string;
  resource: string;
}

/** AddOnDeploymentConfig as a config kind (supportedConfigs, configs, configReferences). */
export const addOnDeploymentConfigKind = {
  group: addOnDeploymentConfigResource.group,
  resource: addOnDeploymentConfigResource.plural,
} as const satisfies GroupResource;

/** One config an add-on uses: its kind and the object. */
export interface ConfigSelection extends GroupResource {
  referent: ConfigReferent;
}

/** Desired configs by group/resource ("<group>/<resource>"), each kind with one or more objects. */
export type DesiredConfigs = ReadonlyMap<string, readonly ConfigSelection[]>;

export function groupResourceKey(gr: { group?: string; resource: string }): string {
  return `${gr.group ?? ''}/${gr.resource}`;
}

/** Same object (namespace '' and absent are the same). */
export const sameReferent = (a: ConfigReferent | undefined, b: ConfigReferent | undefined): boolean =>
  (a?.name ?? '') === (b?.name ?? '') && (a?.namespace ?? '') === (b?.namespace ?? '');

function referentOf(c: { name: string; namespace?: string }): ConfigReferent {
  return c.namespace ? { name: c.name, namespace: c.namespace } : { name: c.name };
}

/**
 * The ClusterManagementAddOn's default configs: supportedConfigs entries with a defaultConfig
 * (v1beta1 defaultConfigs arrive converted into them); OCM's no-default sentinel and empty names
 * are no default.
 */
export function defaultConfigs(cma: ClusterManagementAddOn): Map<string, ConfigSelection[]> {
  const out = new Map<string, ConfigSelection[]>();
  for (const sc of cma.spec?.supportedConfigs ?? []) {
    const d = sc.defaultConfig;
    if (!d?.name || d.name === reservedNoDefaultConfigName) continue;
    const gr = { group: sc.group ?? '', resource: sc.resource };
    out.set(groupResourceKey(gr), [{ ...gr, referent: referentOf(d) }]);
  }
  return out;
}

/**
 * `base` with every group/resource that `configs` names replaced by the objects `configs` lists
 * for it (in their order, without duplicates); other kinds are kept.
 */
export function overrideConfigs(
  base: DesiredConfigs,
  configs: readonly AddOnConfig[] | undefined,
): Map<string, ConfigSelection[]> {
  const out = new Map<string, ConfigSelection[]>([...base].map(([k, v]) => [k, [...v]]));
  const replaced = new Set<string>();
  for (const c of configs ?? []) {
    const gr = { group: c.group ?? '', resource: c.resource };
    const key = groupResourceKey(gr);
    if (!replaced.has(key)) {
      out.set(key, []);
      replaced.add(key);
    }
    const list = out.get(key) ?? [];
    const referent = referentOf(c);
    if (!list.some((s) => sameReferent(s.referent, referent))) list.push({ ...gr, referent });
    out.set(key, list);
  }
  return out;
}

/** The kinds among `configs` the ClusterManagementAddOn does not list in supportedConfigs. */
export function unsupportedKinds(
  cma: ClusterManagementAddOn,
  configs: readonly AddOnConfig[] | undefined,
): GroupResource[] {
  const supported = new Set((cma.spec?.supportedConfigs ?? []).map(groupResourceKey));
  const out: GroupResource[] = [];
  for (const c of configs ?? []) {
    const gr = { group: c.group ?? '', resource: c.resource };
    if (
      !supported.has(groupResourceKey(gr)) &&
      !out.some((o) => groupResourceKey(o) === groupResourceKey(gr))
    )
      out.push(gr);
  }
  return out;
}

/** `configs` without the kinds in `refused`. */
export function withoutKinds(
  configs: readonly AddOnConfig[] | undefined,
  refused: readonly GroupResource[],
): AddOnConfig[] {
  const keys = new Set(refused.map(groupResourceKey));
  return (configs ?? []).filter(
    (c) => !keys.has(groupResourceKey({ group: c.group ?? '', resource: c.resource })),
  );
}

/** Every selection of `desired`, kinds sorted by group then resource (OCM's order). */
export function sortedSelections(desired: DesiredConfigs): ConfigSelection[] {
  return [...desired.values()]
    .filter((list) => list.length > 0)
    .sort((a, b) => {
      const x = a[0] as ConfigSelection;
      const y = b[0] as ConfigSelection;
      if (x.group !== y.group) return x.group < y.group ? -1 : 1;
      return x.resource < y.resource ? -1 : x.resource > y.resource ? 1 : 0;
    })
    .flat();
}

/** JSON as Go's encoding/json writes a decoded object: keys sorted, <, >, &, U+2028/9 escaped. */
export function goJson(v: unknown): string {
  return canonicalJson(v).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/**
 * OCM's spec hash of a config object: sha256 of everything but apiVersion, kind, metadata and
 * status (for an AddOnDeploymentConfig: `{"spec":{…}}`), lowercase hex.
 */
export function configSpecHash(obj: Record<string, unknown>): string {
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (k === 'apiVersion' || k === 'kind' || k === 'metadata' || k === 'status') continue;
    rest[k] = v;
  }
  return createHash('sha256').update(goJson(rest)).digest('hex');
}

/** A selection with what the config manager knows of the object now. */
export interface ResolvedSelection extends ConfigSelection {
  /** '' when the object does not exist (OCM writes the reference with an empty hash) */
  specHash: string;
  /** metadata.generation of the object, when it exists */
  generation?: number;
}

export function specHashOf(s: ResolvedSelection): ConfigSpecHash {
  return { ...s.referent, specHash: s.specHash };
}

/**
 * status.configReferences for `desired` (already sorted): one entry per selection, desiredConfig
 * and the deprecated name/namespace from the selection, lastAppliedConfig kept from the entry
 * that referenced the same object before, lastObservedGeneration from the object (reset when the
 * referenced object changed, as OCM does). Entries of objects no longer desired are dropped.
 */
export function mergeConfigReferences(
  existing: readonly ConfigReference[] | undefined,
  desired: readonly ResolvedSelection[],
): ConfigReference[] {
  return desired.map((s) => {
    const before = (existing ?? []).find(
      (e) =>
        groupResourceKey(e) === groupResourceKey(s) &&
        sameReferent(e.desiredConfig ?? { name: e.name, namespace: e.namespace }, s.referent),
    );
    const ref: ConfigReference = {
      group: s.group,
      resource: s.resource,
      name: s.referent.name,
      ...(s.referent.namespace ? { namespace: s.referent.namespace } : {}),
      desiredConfig: specHashOf(s),
    };
    if (before?.lastAppliedConfig) ref.lastAppliedConfig = before.lastAppliedConfig;
    const generation = s.generation ?? before?.lastObservedGeneration;
    if (generation !== undefined) ref.lastObservedGeneration = generation;
    return ref;
  });
}

/** Same object and hash (namespace '' and absent are the same). */
export function sameSpecHash(a: ConfigSpecHash | undefined, b: ConfigSpecHash | undefined): boolean {
  if (!a || !b) return a === b;
  return sameReferent(a, b) && (a.specHash ?? '') === (b.specHash ?? '');
}
