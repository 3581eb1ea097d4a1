// The placements page: every Placement with the clusters its PlacementDecisions chose (label
// cluster.open-cluster-management.io/placement=<name>, same namespace) and, where the viewer may
// read them, the AddOnPlacementScores of those clusters; and every ManifestWorkReplicaSet with its
// rollout progress (status.summary) and conditions.
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { arrayOf, recordOf, stringOf } from './format.ts';
import { notReady, staleNote, statusBadge } from './panels.ts';
import {
  addOnPlacementScoresPath,
  manifestWorkReplicaSetsPath,
  placementDecisionsPath,
  placementsPath,
} from './paths.ts';
import type { KubeObject } from './types.ts';
import { useCollection } from './use-collection.ts';

const PLACEMENT_LABEL = 'cluster.open-cluster-management.io/placement';

function decidedClusters(placement: KubeObject, decisions: readonly KubeObject[]): string[] {
  const ns = placement.metadata.namespace;
  return decisions
    .filter(
      (d) => d.metadata.namespace === ns && d.metadata.labels?.[PLACEMENT_LABEL] === placement.metadata.name,
    )
    .flatMap((d) => arrayOf(d.status?.decisions).map((x) => stringOf(recordOf(x).clusterName)))
    .filter(Boolean)
    .sort();
}

/** `<score name>=<value>` of every AddOnPlacementScore in a cluster's namespace. */
function scoresOf(cluster: string, scores: readonly KubeObject[]): string[] {
  return scores
    .filter((s) => s.metadata.namespace === cluster)
    .flatMap((s) =>
      arrayOf(s.status?.scores).map(
        (x) => `${s.metadata.name}/${stringOf(recordOf(x).name)}=${stringOf(recordOf(x).value)}`,
      ),
    );
}

function Placements(): VNode {
  const placements = useCollection(placementsPath);
  const decisions = useCollection(placementDecisionsPath);
  const scores = useCollection(addOnPlacementScoresPath);
  const readableScores = scores.phase === 'ready' ? scores.items : [];
  return html`<section data-testid="placements">
    <h2>Placements ${staleNote(placements)}</h2>
    ${
      notReady(placements, 'Placements') ??
      (placements.items.length === 0
        ? html`<p class="muted">No Placements.</p>`
        : html`<table class="grid">
            <thead><tr><th>Namespace</th><th>Placement</th><th>Selected</th><th>Decisions</th><th>Scores</th><th>Conditions</th></tr></thead>
            <tbody>${placements.items.map((p) => {
              const chosen = decidedClusters(p, decisions.items);
              const satisfied = recordOf(
                p.status?.conditions?.find((c) => c.type === 'PlacementSatisfied'),
              ).status;
              return html`<tr data-testid=${`placement-row-${p.metadata.namespace}-${p.metadata.name}`}>
                <td>${p.metadata.namespace}</td>
                <td>${p.metadata.name}</td>
                <td class="num">${stringOf(p.status?.numberOfSelectedClusters) || '0'}</td>
                <td>${chosen.length ? chosen.map((c) => html`<div class="mono">${c}</div>`) : '–'}</td>
                <td>${chosen.flatMap((c) => scoresOf(c, readableScores)).map((s) => html`<div class="mono">${s}</div>`)}</td>
                <td>${statusBadge(stringOf(satisfied) || 'Unknown', 'Satisfied')}</td>
              </tr>`;
            })}</tbody>
          </table>`)
    }
    ${notReady(decisions, 'PlacementDecisions')}
    ${scores.phase === 'error' && scores.error?.code !== 404 ? notReady(scores, 'AddOnPlacementScores') : undefined}
  </section>`;
}

function ReplicaSets(): VNode {
  const sets = useCollection(manifestWorkReplicaSetsPath);
  return html`<section data-testid="manifestworkreplicasets">
    <h2>ManifestWorkReplicaSets ${staleNote(sets)}</h2>
    ${
      notReady(sets, 'ManifestWorkReplicaSets') ??
      (sets.items.length === 0
        ? html`<p class="muted">No ManifestWorkReplicaSets.</p>`
        : html`<table class="grid">
            <thead><tr><th>Namespace</th><th>Name</th><th>Rollout (applied / available / degraded / total)</th><th>Conditions</th></tr></thead>
            <tbody>${sets.items.map((s) => {
              const summary = recordOf(s.status?.summary);
              const total = Number(summary.total ?? 0);
              const available = Number(summary.available ?? 0);
              return html`<tr data-testid=${`mwrs-row-${s.metadata.namespace}-${s.metadata.name}`}>
                <td>${s.metadata.namespace}</td>
                <td>${s.metadata.name}</td>
                <td>
                  <progress max=${Math.max(total, 1)} value=${available}></progress>
                  <span class="mono"> ${stringOf(summary.Applied ?? summary.applied) || '0'} / ${available} / ${stringOf(summary.degraded) || '0'} / ${total}</span>
                </td>
                <td>${(s.status?.conditions ?? []).map((c) => statusBadge(c.status, c.type))}</td>
              </tr>`;
            })}</tbody>
          </table>`)
    }
  </section>`;
}

export function PlacementsPage(): VNode {
  return html`<div data-testid="placements-page">
    <h1>Placements</h1>
    <${Placements} />
    <${ReplicaSets} />
  </div>`;
}
