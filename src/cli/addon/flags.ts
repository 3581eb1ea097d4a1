// Flag values of `tether addon enable|disable`, `tether install hub-addon` and `tether get addon`,
// parsed and checked before anything talks to the hub: addon names, `k=v` labels and annotations,
// `--config group/resource:ns/name` references, and which target (clusters, all clusters or a
// Placement) a command names. Every refusal says what to change on the command line. Pure: no I/O.
import type { AddOnConfig } from '../../api/addon.ts';
import { InvalidArgumentError } from '../../errors.ts';
import { type PlacementRef, parsePlacementRef } from '../../placement/cli/work-by-placement.ts';

const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
// A label key: an optional DNS-subdomain prefix and `/`, then a name of up to 63 characters.
const qualifiedName =
  /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const labelValue = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** `--names a,b`: addon (ClusterManagementAddOn) names, at least one, duplicates dropped, in order. */
export function addonNameList(value: string): string[] {
  const names = [
    ...new Set(
      value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
  if (names.length === 0) throw new InvalidArgumentError('--names needs at least one addon name');
  for (const name of names) {
    if (!dnsSubdomain.test(name)) {
      throw new InvalidArgumentError(
        `--names: "${name}" is not an addon name (lower-case letters, digits, '-' and '.')`,
      );
    }
  }
  return names;
}

/**
 * `--annotate k=v` (repeatable): split at the first `=`, so a value may hold `=` and `,` (e.g.
 * `addon.open-cluster-management.io/values={"global":{"imagePullPolicy":"Never"}}`).
 */
export function parseAnnotations(values: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const text of values) {
    const eq = text.indexOf('=');
    const key = eq < 0 ? '' : text.slice(0, eq);
    if (!qualifiedName.test(key)) {
      throw new InvalidArgumentError(
        `--annotate "${text}" must be key=value with a valid annotation key (e.g. example.com/owner=team-a)`,
      );
    }
    out[key] = text.slice(eq + 1);
  }
  return out;
}

/** `--labels k=v[,k2=v2]` (repeatable): label values cannot hold `,`, so a comma separates pairs. */
export function parseLabels(values: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const text of values.flatMap((v) => v.split(','))) {
    const pair = text.trim();
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const key = eq < 0 ? '' : pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    if (!qualifiedName.test(key) || !labelValue.test(value)) {
      throw new InvalidArgumentError(
        `--labels "${pair}" must be key=value with a valid label key and value (at most 63 characters of letters, digits, '-', '_' and '.')`,
      );
    }
    out[key] = value;
  }
  return out;
}

/**
 * `--config group/resource:namespace/name` (or `resource:…` for the core group, `…:name` for a
 * cluster-scoped config), as a ManagedClusterAddOn's or a placement strategy's configs entry.
 */
export function parseConfigRef(text: string): AddOnConfig {
  const colon = text.indexOf(':');
  const groupResource = colon < 0 ? '' : text.slice(0, colon);
  const referent = text.slice(colon + 1);
  const gr = groupResource.split('/');
  const ref = referent.split('/');
  const [group, resource] = gr.length === 2 ? gr : ['', gr[0] ?? ''];
  const [namespace, name] = ref.length === 2 ? ref : [undefined, ref[0] ?? ''];
  const valid =
    colon > 0 &&
    gr.length <= 2 &&
    ref.length <= 2 &&
    (group === '' || dnsSubdomain.test(group ?? '')) &&
    dnsLabel.test(resource ?? '') &&
    (namespace === undefined || dnsLabel.test(namespace)) &&
    dnsSubdomain.test(name ?? '');
  if (!valid) {
    throw new InvalidArgumentError(
      `--config "${text}" must be <group>/<resource>:<namespace>/<name>, e.g. addon.open-cluster-management.io/addondeploymentconfigs:open-cluster-management-hub/proxy-settings`,
    );
  }
  return {
    group: group ?? '',
    resource: resource ?? '',
    ...(namespace === undefined ? {} : { namespace }),
    name: name ?? '',
  };
}

/** The configs of one command: parsed, and at most one per group/resource (OCM's rule). */
export function parseConfigRefs(values: readonly string[]): AddOnConfig[] {
  const configs = values.map(parseConfigRef);
  const seen = new Set<string>();
  for (const c of configs) {
    const key = `${c.group}/${c.resource}`;
    if (seen.has(key)) {
      throw new InvalidArgumentError(
        `--config names ${key} twice: an addon takes one config of each kind; keep one`,
      );
    }
    seen.add(key);
  }
  return configs;
}

/** What `addon enable` writes, and where. */
export type EnableTarget =
  | {
      kind: 'clusters';
      clusters: string[];
      installNamespace: string;
      labels: Record<string, string>;
      annotations: Record<string, string>;
    }
  | { kind: 'placement'; placement: PlacementRef };

export interface EnableFlags {
  clusters?: string[];
  placement?: string;
  namespace?: string;
  labels?: string[];
  annotate?: string[];
}

/** Where `addon enable` installs an addon unless -n says otherwise (OCM's and clusteradm's default). */
export const defaultEnableNamespace = 'open-cluster-management-agent-addon';

/** Checks `addon enable`'s target flags together: exactly one target; per-cluster flags only with --clusters. */
export function enableTarget(flags: EnableFlags): EnableTarget {
  if (flags.clusters !== undefined && flags.placement !== undefined) {
    throw new InvalidArgumentError(
      'give either --clusters (ManagedClusterAddOns now) or --placement (the hub installs on the clusters a Placement selects), not both',
    );
  }
  if (flags.placement !== undefined) {
    const perCluster = [
      flags.namespace !== undefined ? '-n/--namespace' : '',
      (flags.labels?.length ?? 0) > 0 ? '--labels' : '',
      (flags.annotate?.length ?? 0) > 0 ? '--annotate' : '',
    ].filter(Boolean);
    if (perCluster.length > 0) {
      throw new InvalidArgumentError(
        `${perCluster.join(', ')} set fields of the ManagedClusterAddOns --clusters creates; with --placement the hub's addon manager creates them: drop ${perCluster.join(', ')} (an install namespace comes from an AddOnDeploymentConfig's agentInstallNamespace: --config addon.open-cluster-management.io/addondeploymentconfigs:<ns>/<name>)`,
      );
    }
    return { kind: 'placement', placement: parsePlacementRef(flags.placement) };
  }
  if (flags.clusters === undefined) {
    throw new InvalidArgumentError(
      'name where to enable the addon: --clusters c1,c2 or --placement <ns>/<name>',
    );
  }
  const installNamespace = flags.namespace ?? defaultEnableNamespace;
  if (!dnsLabel.test(installNamespace)) {
    throw new InvalidArgumentError(`-n/--namespace "${installNamespace}" is not a namespace name`);
  }
  return {
    kind: 'clusters',
    clusters: flags.clusters,
    installNamespace,
    labels: parseLabels(flags.labels ?? []),
    annotations: parseAnnotations(flags.annotate ?? []),
  };
}

/** What `addon disable` removes. */
export type DisableTarget =
  | { kind: 'clusters'; clusters: string[] }
  | { kind: 'all-clusters' }
  | { kind: 'placement'; placement: PlacementRef };

export interface DisableFlags {
  clusters?: string[];
  allClusters?: boolean;
  placement?: string;
}

/** Checks `addon disable`'s target flags: exactly one of --clusters, --all-clusters, --placement. */
export function disableTarget(flags: DisableFlags): DisableTarget {
  const given = [
    flags.clusters !== undefined ? '--clusters' : '',
    flags.allClusters ? '--all-clusters' : '',
    flags.placement !== undefined ? '--placement' : '',
  ].filter(Boolean);
  if (given.length === 0) {
    throw new InvalidArgumentError(
      'name where to disable the addon: --clusters c1,c2, --all-clusters or --placement <ns>/<name>',
    );
  }
  if (given.length > 1) {
    throw new InvalidArgumentError(`give one of ${given.join(', ')}, not several`);
  }
  if (flags.placement !== undefined) {
    return { kind: 'placement', placement: parsePlacementRef(flags.placement) };
  }
  if (flags.allClusters) return { kind: 'all-clusters' };
  return { kind: 'clusters', clusters: flags.clusters ?? [] };
}
