// What a view shows instead of its table when a collection is not there: loading, forbidden (the
// apiserver's own message quoted: the console adds no rights, so the viewer must see which one is
// missing), not served by this hub (404: an API not installed), or another error. Never an empty
// table that looks like "nothing there".
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import type { CollectionState } from './watch.ts';

/** The panel for a collection that is not ready, or undefined when it is. */
export function notReady(state: CollectionState, what: string): VNode | undefined {
  if (state.phase === 'loading') return html`<p class="muted" data-testid="loading">Loading ${what}…</p>`;
  if (state.phase !== 'error' || !state.error) return undefined;
  const { code, message } = state.error;
  if (code === 403) {
    return html`<div class="panel forbidden" data-testid="forbidden">
      <strong>Forbidden</strong>: your user may not list ${what}.
      <blockquote>${message}</blockquote>
    </div>`;
  }
  if (code === 404) {
    return html`<div class="panel missing" data-testid="not-found">
      <strong>Not served</strong>: this hub does not serve ${what}.
      <blockquote>${message}</blockquote>
    </div>`;
  }
  return html`<div class="panel error" data-testid="error">
    <strong>Error ${code}</strong> listing ${what}.
    <blockquote>${message}</blockquote>
  </div>`;
}

/** A small marker when the collection's watch is down and being re-established. */
export function staleNote(state: CollectionState): VNode | undefined {
  return state.phase === 'ready' && !state.live
    ? html`<span class="stale" data-testid="reconnecting">reconnecting…</span>`
    : undefined;
}

/** A True/False/Unknown badge; `trueIsBad` for conditions like Degraded. */
export function statusBadge(status: string, label: string, testid?: string, trueIsBad = false): VNode {
  const good = trueIsBad ? 'False' : 'True';
  const kind = status === good ? 'ok' : status === 'Unknown' || status === '' ? 'unknown' : 'bad';
  return html`<span class=${`badge ${kind}`} data-testid=${testid} data-status=${status}>${label}</span>`;
}
