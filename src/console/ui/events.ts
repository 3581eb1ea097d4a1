// The events page: the hub's core/v1 Events, newest first, filterable by cluster (an event is a
// cluster's when it is in the cluster's namespace or is about an object named like the cluster,
// e.g. its ManagedCluster). At most MAX_SHOWN are drawn; the cache holds what the hub keeps.
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { useState } from 'preact/hooks';
import { age, recordOf, stringOf } from './format.ts';
import { notReady, staleNote } from './panels.ts';
import { eventsPath, managedClustersPath } from './paths.ts';
import type { KubeObject } from './types.ts';
import { useCollection } from './use-collection.ts';

const MAX_SHOWN = 500;

function timeOf(e: KubeObject): string {
  return (
    stringOf(e.lastTimestamp) ||
    stringOf(e.eventTime) ||
    stringOf(e.firstTimestamp) ||
    e.metadata.creationTimestamp ||
    ''
  );
}

/** Whether event `e` concerns cluster `cluster` ('' = every event). */
export function eventConcerns(e: KubeObject, cluster: string): boolean {
  if (cluster === '') return true;
  return e.metadata.namespace === cluster || stringOf(recordOf(e.involvedObject).name) === cluster;
}

export function EventsPage(): VNode {
  const events = useCollection(eventsPath);
  const clusters = useCollection(managedClustersPath);
  const [cluster, setCluster] = useState('');
  const shown = events.items
    .filter((e) => eventConcerns(e, cluster))
    .sort((a, b) => timeOf(b).localeCompare(timeOf(a)))
    .slice(0, MAX_SHOWN);
  const names = clusters.items.map((c) => c.metadata.name).sort();
  return html`<div data-testid="events-page">
    <h1>Events ${staleNote(events)}</h1>
    <label>Cluster
      <select data-testid="events-cluster" onChange=${(ev: Event) => setCluster((ev.target as HTMLSelectElement).value)}>
        <option value="">all</option>
        ${names.map((n) => html`<option value=${n} selected=${n === cluster}>${n}</option>`)}
      </select>
    </label>
    ${
      notReady(events, 'Events') ??
      (shown.length === 0
        ? html`<p class="muted">No events${cluster ? ` for ${cluster}` : ''}.</p>`
        : html`<table class="grid" data-testid="events-table">
            <thead><tr><th>Age</th><th>Type</th><th>Reason</th><th>Object</th><th>Namespace</th><th>Message</th></tr></thead>
            <tbody>${shown.map((e) => {
              const obj = recordOf(e.involvedObject);
              return html`<tr key=${e.metadata.uid ?? e.metadata.name} class=${stringOf(e.type) === 'Warning' ? 'warning' : ''}>
                <td title=${timeOf(e)}>${age(timeOf(e))}</td>
                <td>${stringOf(e.type)}</td>
                <td>${stringOf(e.reason)}</td>
                <td class="mono">${stringOf(obj.kind)}/${stringOf(obj.name)}</td>
                <td>${e.metadata.namespace ?? ''}</td>
                <td>${stringOf(e.message)}</td>
              </tr>`;
            })}</tbody>
          </table>`)
    }
  </div>`;
}
