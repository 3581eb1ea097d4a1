// The fleet page (the first page): every ManagedCluster with Joined / Available, taints, cluster
// set, claims, CPU and memory, and its add-ons with their health, plus the availability plot.
// Add-ons come from one all-namespaces watch of ManagedClusterAddOns (a cluster's add-ons live in
// its namespace); a viewer who may not list them sees the forbidden panel under the table.
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { AvailabilityPlot } from './availability-plot.ts';
import { arrayOf, conditionStatus, formatCpu, formatMemory, recordOf, stringOf } from './format.ts';
import { notReady, staleNote, statusBadge } from './panels.ts';
import { managedClusterAddOnsPath, managedClustersPath } from './paths.ts';
import { clusterHref } from './route.ts';
import type { KubeObject } from './types.ts';
import { useCollection } from './use-collection.ts';

const CLUSTER_SET_LABEL = 'cluster.open-cluster-management.io/clusterset';

function taintsOf(cluster: KubeObject): string[] {
  return arrayOf(cluster.spec?.taints).map((t) => {
    const r = recordOf(t);
    return `${stringOf(r.key)}${r.value ? `=${stringOf(r.value)}` : ''}:${stringOf(r.effect)}`;
  });
}

function claimsOf(cluster: KubeObject): string[] {
  return arrayOf(cluster.status?.clusterClaims).map((c) => {
    const r = recordOf(c);
    return `${stringOf(r.name)}=${stringOf(r.value)}`;
  });
}

/** An add-on's badge: its Available condition as health. */
export function addonBadge(addon: KubeObject): VNode {
  const cluster = addon.metadata.namespace ?? '';
  const status = conditionStatus(addon, 'Available');
  return statusBadge(status, addon.metadata.name, `addon-${cluster}-${addon.metadata.name}`);
}

function resources(cluster: KubeObject, field: 'cpu' | 'memory'): string {
  const allocatable = recordOf(cluster.status?.allocatable)[field];
  const capacity = recordOf(cluster.status?.capacity)[field];
  const fmt = field === 'cpu' ? formatCpu : formatMemory;
  if (allocatable === undefined && capacity === undefined) return '–';
  return `${fmt(allocatable)} / ${fmt(capacity)}`;
}

function ClusterRow({ cluster, addons }: { cluster: KubeObject; addons: KubeObject[] }): VNode {
  const name = cluster.metadata.name;
  const joined = conditionStatus(cluster, 'ManagedClusterJoined');
  const available = conditionStatus(cluster, 'ManagedClusterConditionAvailable');
  const taints = taintsOf(cluster);
  const claims = claimsOf(cluster);
  return html`<tr data-testid=${`cluster-row-${name}`} data-available=${available} data-joined=${joined}>
    <td><a href=${clusterHref(name)}>${name}</a></td>
    <td>${statusBadge(joined, joined)}</td>
    <td>${statusBadge(available, available)}</td>
    <td>${cluster.metadata.labels?.[CLUSTER_SET_LABEL] ?? '–'}</td>
    <td>${taints.length ? taints.map((t) => html`<div class="mono">${t}</div>`) : '–'}</td>
    <td>${claims.length ? claims.map((c) => html`<div class="mono">${c}</div>`) : '–'}</td>
    <td class="num">${resources(cluster, 'cpu')}</td>
    <td class="num">${resources(cluster, 'memory')}</td>
    <td>${addons.length ? addons.map(addonBadge) : '–'}</td>
  </tr>`;
}

export function FleetPage(): VNode {
  const clusters = useCollection(managedClustersPath);
  const addons = useCollection(managedClusterAddOnsPath());
  const byCluster = new Map<string, KubeObject[]>();
  for (const addon of addons.items) {
    const ns = addon.metadata.namespace ?? '';
    byCluster.set(ns, [...(byCluster.get(ns) ?? []), addon]);
  }
  const sorted = [...clusters.items].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const available = sorted.filter(
    (c) => conditionStatus(c, 'ManagedClusterConditionAvailable') === 'True',
  ).length;
  return html`<section data-testid="fleet">
    <h1>Fleet ${staleNote(clusters)}</h1>
    ${
      notReady(clusters, 'ManagedClusters') ??
      html`<p class="summary" data-testid="fleet-summary">${available} of ${sorted.length} clusters available</p>
        <${AvailabilityPlot} />
        ${
          sorted.length === 0
            ? html`<p class="muted" data-testid="no-clusters">No ManagedClusters on this hub yet.</p>`
            : html`<table class="grid" data-testid="fleet-table">
                <thead><tr><th>Cluster</th><th>Joined</th><th>Available</th><th>Cluster set</th><th>Taints</th>
                  <th>Claims</th><th>CPU alloc / cap</th><th>Memory alloc / cap</th><th>Add-ons</th></tr></thead>
                <tbody>${sorted.map(
                  (c) =>
                    html`<${ClusterRow} key=${c.metadata.name} cluster=${c} addons=${byCluster.get(c.metadata.name) ?? []} />`,
                )}</tbody>
              </table>`
        }
        ${notReady(addons, 'ManagedClusterAddOns')}`
    }
  </section>`;
}
