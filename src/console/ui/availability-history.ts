// Clusters available over time since the page opened: a sample of the ManagedCluster collection
// (watch.ts) taken on every change of it, not by asking the API again. Started once by main.ts so
// the history begins when the page opens, whichever page is shown first.
import { conditionStatus } from './format.ts';
import { managedClustersPath } from './paths.ts';
import { snapshot, subscribe } from './watch.ts';

export interface AvailabilitySample {
  /** seconds since the epoch */
  t: number;
  available: number;
  total: number;
}

/** Samples kept; the oldest go first (one per change: hours of a busy fleet). */
export const MAX_SAMPLES = 5_000;

const samples: AvailabilitySample[] = [];
const listeners = new Set<() => void>();
let started = false;

function sample(): void {
  const state = snapshot(managedClustersPath);
  if (state.phase !== 'ready') return;
  const available = state.items.filter(
    (c) => conditionStatus(c, 'ManagedClusterConditionAvailable') === 'True',
  ).length;
  const total = state.items.length;
  const last = samples[samples.length - 1];
  if (last && last.available === available && last.total === total) return;
  samples.push({ t: Date.now() / 1000, available, total });
  if (samples.length > MAX_SAMPLES) samples.shift();
  for (const listener of listeners) listener();
}

/** Starts sampling (idempotent); the subscription lives as long as the page. */
export function startAvailabilityHistory(): void {
  if (started) return;
  started = true;
  subscribe(managedClustersPath, sample);
}

/** The samples so far, oldest first. */
export function availabilitySamples(): readonly AvailabilitySample[] {
  return samples;
}

/** Calls `listener` after each new sample; returns the unsubscribe. */
export function onAvailabilitySample(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
