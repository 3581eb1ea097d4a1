// One cluster's page (#/clusters/<name>): its conditions, its add-ons with every condition, its
// ManifestWorks with Applied / Available / Degraded and status feedback, its ManagedServiceAccounts
// with token expiry, and its tunnel (tunnel.ts: the proxy-server's status through the gateway). Everything of a cluster lives in the namespace named after it, so each list here is one
// namespace's: a viewer with rights on that namespace only still sees it.
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { age, arrayOf, conditionStatus, recordOf, stringOf } from './format.ts';
import { notReady, staleNote, statusBadge } from './panels.ts';
import {
  managedClusterAddOnsPath,
  managedClustersPath,
  managedServiceAccountsPath,
  manifestWorksPath,
} from './paths.ts';
import { TunnelSection } from './tunnel.ts';
import type { Condition, KubeObject } from './types.ts';
import { useCollection } from './use-collection.ts';

function ConditionList({ conditions }: { conditions: Condition[] | undefined }): VNode {
  if (!conditions?.length) return html`<span class="muted">no conditions</span>`;
  return html`<ul class="conditions">
    ${conditions.map(
      (c) => html`<li title=${c.message ?? ''}>
        ${statusBadge(c.status, c.type, undefined, c.type.includes('Degraded') || c.type.includes('Progressing'))}
        <span class="muted">${c.reason ?? ''} ${c.message ? `— ${c.message}` : ''}</span>
      </li>`,
    )}
  </ul>`;
}

function byName(a: KubeObject, b: KubeObject): number {
  return a.metadata.name.localeCompare(b.metadata.name);
}

/** Status feedback values of a work (status.resourceStatus.manifests[].statusFeedback.values, the field
 * OCM's JSON names in the singular): `<Kind>/<name> <value name>=<value>` for each. */
function feedbackOf(work: KubeObject): string[] {
  const manifests = arrayOf(recordOf(work.status?.resourceStatus).manifests);
  const out: string[] = [];
  for (const m of manifests) {
    const meta = recordOf(recordOf(m).resourceMeta);
    const resource = `${stringOf(meta.kind) || stringOf(meta.resource)}/${stringOf(meta.name)}`;
    for (const v of arrayOf(recordOf(recordOf(m).statusFeedback).values)) {
      const value = recordOf(recordOf(v).fieldValue);
      const shown = value.integer ?? value.string ?? value.boolean ?? value.jsonRaw;
      out.push(`${resource} ${stringOf(recordOf(v).name)}=${shown === undefined ? '' : String(shown)}`);
    }
  }
  return out;
}

function Addons({ cluster }: { cluster: string }): VNode {
  const addons = useCollection(managedClusterAddOnsPath(cluster));
  return html`<section data-testid="addons">
    <h2>Add-ons ${staleNote(addons)}</h2>
    ${
      notReady(addons, `ManagedClusterAddOns in namespace ${cluster}`) ??
      (addons.items.length === 0
        ? html`<p class="muted">No add-ons enabled.</p>`
        : html`<table class="grid">
            <thead><tr><th>Add-on</th><th>Health</th><th>Conditions</th></tr></thead>
            <tbody>${[...addons.items].sort(byName).map(
              (a) => html`<tr data-testid=${`addon-row-${a.metadata.name}`}>
                <td>${a.metadata.name}</td>
                <td>${statusBadge(conditionStatus(a, 'Available'), conditionStatus(a, 'Available'), `addon-${cluster}-${a.metadata.name}`)}</td>
                <td><${ConditionList} conditions=${a.status?.conditions} /></td>
              </tr>`,
            )}</tbody>
          </table>`)
    }
  </section>`;
}

function Works({ cluster }: { cluster: string }): VNode {
  const works = useCollection(manifestWorksPath(cluster));
  return html`<section data-testid="works">
    <h2>ManifestWorks ${staleNote(works)}</h2>
    ${
      notReady(works, `ManifestWorks in namespace ${cluster}`) ??
      (works.items.length === 0
        ? html`<p class="muted">No ManifestWorks.</p>`
        : html`<table class="grid">
            <thead><tr><th>Work</th><th>Applied</th><th>Available</th><th>Degraded</th><th>Feedback</th><th>Age</th></tr></thead>
            <tbody>${[...works.items].sort(byName).map((w) => {
              const applied = conditionStatus(w, 'Applied');
              const available = conditionStatus(w, 'Available');
              const degraded = conditionStatus(w, 'Degraded');
              const feedback = feedbackOf(w);
              return html`<tr data-testid=${`work-row-${w.metadata.name}`} data-applied=${applied} data-available=${available} data-degraded=${degraded}>
                <td>${w.metadata.name}</td>
                <td>${statusBadge(applied, applied)}</td>
                <td>${statusBadge(available, available)}</td>
                <td>${statusBadge(degraded, degraded, undefined, true)}</td>
                <td>${feedback.length ? feedback.map((f) => html`<div class="mono">${f}</div>`) : '–'}</td>
                <td>${age(w.metadata.creationTimestamp)}</td>
              </tr>`;
            })}</tbody>
          </table>`)
    }
  </section>`;
}

function ServiceAccounts({ cluster }: { cluster: string }): VNode {
  const msas = useCollection(managedServiceAccountsPath(cluster));
  return html`<section data-testid="managedserviceaccounts">
    <h2>ManagedServiceAccounts ${staleNote(msas)}</h2>
    ${
      notReady(msas, `ManagedServiceAccounts in namespace ${cluster}`) ??
      (msas.items.length === 0
        ? html`<p class="muted">No ManagedServiceAccounts.</p>`
        : html`<table class="grid">
            <thead><tr><th>Name</th><th>Token expires</th><th>Conditions</th></tr></thead>
            <tbody>${[...msas.items].sort(byName).map((m) => {
              const expires = stringOf(m.status?.expirationTimestamp);
              return html`<tr data-testid=${`msa-row-${m.metadata.name}`}>
                <td>${m.metadata.name}</td>
                <td title=${expires}>${expires ? `${expires} (${age(expires)})` : '–'}</td>
                <td><${ConditionList} conditions=${m.status?.conditions} /></td>
              </tr>`;
            })}</tbody>
          </table>`)
    }
  </section>`;
}

export function ClusterPage({ name }: { name: string }): VNode {
  const clusters = useCollection(managedClustersPath);
  const cluster = clusters.items.find((c) => c.metadata.name === name);
  return html`<div data-testid="cluster-page" data-cluster=${name}>
    <h1><a href="#/">Fleet</a> / ${name}</h1>
    <section data-testid="cluster-conditions">
      <h2>Conditions</h2>
      ${
        notReady(clusters, 'ManagedClusters') ??
        (cluster
          ? html`<${ConditionList} conditions=${cluster.status?.conditions} />`
          : html`<p class="muted" data-testid="cluster-missing">No ManagedCluster named ${name}.</p>`)
      }
    </section>
    <${Addons} cluster=${name} />
    <${TunnelSection} cluster=${name} />
    <${Works} cluster=${name} />
    <${ServiceAccounts} cluster=${name} />
  </div>`;
}
