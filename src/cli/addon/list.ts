// `tether get addon`: the ManagedClusterAddOns on the hub, one row per cluster and addon with the
// conditions clusteradm's tree shows (Available, ManifestApplied, RegistrationApplied) as
// kubectl prints condition columns (the status, empty while nobody has set it); `-o wide` adds
// Progressing, the install namespace, the health-check mode, Available's reason and the age;
// `-o yaml|json` prints the objects as a kubectl List. Reads only.
import type { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import type { ManagedClusterAddOn } from '../../api/index.ts';
import { InvalidArgumentError } from '../../errors.ts';
import { formatAge } from '../../kube/human-duration.ts';
import { findCondition } from '../../kube/index.ts';
import { formatTable } from '../table.ts';
import { addonClients } from './hub.ts';

export type AddonOutput = 'table' | 'wide' | 'yaml' | 'json';

export interface ListAddonsOptions {
  /** only this cluster's namespace (the cluster must exist) */
  cluster?: string;
  /** only these addons */
  names?: readonly string[];
}

/** The ManagedClusterAddOns, sorted by cluster then addon. */
export async function listManagedClusterAddOns(
  hub: KubeConfig,
  opts: ListAddonsOptions,
): Promise<ManagedClusterAddOn[]> {
  const clients = addonClients(hub);
  if (opts.cluster !== undefined && !(await clients.clusters.get(opts.cluster))) {
    throw new InvalidArgumentError(
      `no ManagedCluster named ${opts.cluster}: check the name with tether get clusters`,
    );
  }
  const { items } = await clients.mcas.list(opts.cluster !== undefined ? { namespace: opts.cluster } : {});
  return items
    .filter((m) => !opts.names || opts.names.length === 0 || opts.names.includes(m.metadata.name ?? ''))
    .sort(
      (a, b) =>
        (a.metadata.namespace ?? '').localeCompare(b.metadata.namespace ?? '') ||
        (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''),
    );
}

const status = (mca: ManagedClusterAddOn, type: string): string =>
  findCondition(mca.status?.conditions, type)?.status ?? '';

/** The addons in the chosen output format; `now` for the AGE column. */
export function formatAddons(
  addons: readonly ManagedClusterAddOn[],
  output: AddonOutput,
  now = Date.now(),
): string {
  if (output === 'json' || output === 'yaml') {
    const list = { apiVersion: 'v1', kind: 'List', items: addons, metadata: { resourceVersion: '' } };
    return output === 'json' ? `${JSON.stringify(list, null, 4)}\n` : stringify(list);
  }
  const headers = ['CLUSTER', 'NAME', 'AVAILABLE', 'MANIFESTAPPLIED', 'REGISTRATIONAPPLIED'];
  const rows = addons.map((m) => [
    m.metadata.namespace ?? '',
    m.metadata.name ?? '',
    status(m, 'Available'),
    status(m, 'ManifestApplied'),
    status(m, 'RegistrationApplied'),
  ]);
  if (output === 'table') return formatTable(headers, rows);
  return formatTable(
    [...headers, 'PROGRESSING', 'INSTALL NAMESPACE', 'HEALTH CHECK', 'REASON', 'AGE'],
    addons.map((m, i) => {
      const created = Date.parse(m.metadata.creationTimestamp ?? '');
      return [
        ...(rows[i] ?? []),
        status(m, 'Progressing'),
        m.status?.namespace || m.spec.installNamespace || '',
        m.status?.healthCheck?.mode ?? '',
        findCondition(m.status?.conditions, 'Available')?.reason ?? '',
        Number.isFinite(created) ? formatAge(now - created) : '',
      ];
    }),
  );
}
