// The cluster page's tunnel section: the proxy-server's view of the cluster's tunnel, read from the
// gateway's `clustergateways/<name>/tunnel?watch=1` as the viewer (the hub authorizes
// `get clustergateways/tunnel`; the console adds no rights). Connected agents with their open
// streams, the proxy-server replicas, the last error, and a uPlot plot of bytes per second both ways,
// streams opened per second and open streams since the page opened (tunnel-rates.ts). The
// subresource streams a status per interval and ends each watch before the apiserver's request
// timeout; it is opened again at once
// (after a refusal or failure: with capped backoff). A refused or unavailable answer shows the panel
// the other sections show (forbidden, not served, error), never an empty box; a hub without the
// gateway's API group is "not served" from discovery, without a request bound to fail.
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { ApiFailure, apiGet, failureOf, failureOfStatus } from './api.ts';
import { age } from './format.ts';
import { notReady } from './panels.ts';
import { clusterTunnelPath } from './paths.ts';
import {
  formatRate,
  MAX_TUNNEL_SAMPLES,
  type TunnelCounters,
  type TunnelSample,
  tunnelSample,
} from './tunnel-rates.ts';
import { BACKOFF_FIRST_MS, BACKOFF_MAX_MS, type CollectionState, sleep } from './watch.ts';
import { WatchLineParser } from './watch-stream.ts';

interface TunnelAgent {
  agent: string;
  addon?: string;
  connectedSince: string;
  openStreams: number;
  unresponsive: boolean;
}

interface TunnelStatus extends TunnelCounters {
  cluster: string;
  serverId: string;
  serverCount: number;
  agents: TunnelAgent[];
  lastError?: { code: string; message: string; time: string };
}

/** Between re-opening a watch that ended normally, and the backoff after a failure. */
const REOPEN_MS = 200;
const PLOT_HEIGHT = 160;

const GATEWAY_GROUP = 'cluster.core.oam.dev';

/**
 * Whether the hub serves the gateway's API group at all (the discovery list, always 200): without
 * a registered gateway the tunnel is "not served", said without a request that would 404.
 */
async function gatewayServed(signal: AbortSignal): Promise<boolean> {
  const response = await apiGet('/apis', signal);
  if (!response.ok) return true; // let the tunnel request itself say what is wrong
  const list = (await response.json()) as { groups?: Array<{ name?: string }> };
  return (list.groups ?? []).some((g) => g.name === GATEWAY_GROUP);
}

/** Reads one watch of the tunnel, calling `onStatus` per status; throws ApiFailure when refused. */
async function readTunnelWatch(
  cluster: string,
  signal: AbortSignal,
  onStatus: (status: TunnelStatus) => void,
): Promise<void> {
  if (!(await gatewayServed(signal)))
    throw new ApiFailure(
      404,
      'NotFound',
      `the hub serves no ${GATEWAY_GROUP} API: no tether gateway is registered with it (tether init installs one; tether gateway --register runs one)`,
    );
  const response = await apiGet(`${clusterTunnelPath(cluster)}?watch=1`, signal);
  if (!response.ok) throw await failureOf(response);
  const reader = response.body?.getReader();
  if (!reader) return;
  const parser = new WatchLineParser();
  for (;;) {
    const { done, value } = await reader.read();
    const events = done ? parser.end() : parser.push(value);
    for (const e of events) {
      if (e.type === 'ERROR') throw failureOfStatus(e.object);
      const status = e.object.status as TunnelStatus | undefined;
      if (status) onStatus(status);
    }
    if (done) return;
  }
}

function plotData(samples: readonly TunnelSample[]): uPlot.AlignedData {
  return [
    samples.map((s) => s.t),
    samples.map((s) => s.fromClusterPerSecond),
    samples.map((s) => s.toClusterPerSecond),
    samples.map((s) => s.streamsPerSecond),
    samples.map((s) => s.openStreams),
  ];
}

function TunnelPlot({ samples, version }: { samples: readonly TunnelSample[]; version: number }): VNode {
  const el = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const target = el.current;
    if (!target) return;
    const p = new uPlot(
      {
        width: Math.max(300, target.clientWidth),
        height: PLOT_HEIGHT,
        scales: {
          y: { range: (_u, _min, max) => [0, Math.max(1024, max)] },
          streams: { range: (_u, _min, max) => [0, Math.max(1, max)] },
        },
        axes: [
          {},
          { label: 'bytes/s', values: (_u, ticks) => ticks.map((v) => formatRate(v)), size: 80 },
          { scale: 'streams', side: 1, label: 'streams', grid: { show: false } },
        ],
        series: [
          {},
          {
            label: 'from cluster',
            stroke: '#2563eb',
            width: 2,
            value: (_u, v) => (v == null ? '–' : formatRate(v)),
          },
          {
            label: 'to cluster',
            stroke: '#d97706',
            width: 2,
            value: (_u, v) => (v == null ? '–' : formatRate(v)),
          },
          {
            label: 'streams opened/s',
            stroke: '#7c3aed',
            width: 1,
            scale: 'streams',
            value: (_u, v) => (v == null ? '–' : v.toFixed(1)),
          },
          { label: 'open streams', stroke: '#6b7280', width: 1, dash: [4, 4], scale: 'streams' },
        ],
      },
      plotData(samples),
      target,
    );
    plot.current = p;
    const onResize = (): void => p.setSize({ width: Math.max(300, target.clientWidth), height: PLOT_HEIGHT });
    window.addEventListener('resize', onResize);
    return () => {
      window.removeEventListener('resize', onResize);
      p.destroy();
      plot.current = null;
    };
  }, []);
  useEffect(() => {
    plot.current?.setData(plotData(samples));
  }, [version]);
  return html`<div class="plot" data-testid="tunnel-plot" data-samples=${samples.length} ref=${el}></div>`;
}

interface TunnelState {
  phase: CollectionState['phase'];
  error?: ApiFailure;
  status?: TunnelStatus;
  live: boolean;
}

export function TunnelSection({ cluster }: { cluster: string }): VNode {
  const [state, setState] = useState<TunnelState>({ phase: 'loading', live: false });
  const samples = useRef<TunnelSample[]>([]);
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const ac = new AbortController();
    samples.current = [];
    let previous: TunnelCounters | undefined;
    (async () => {
      let backoff = BACKOFF_FIRST_MS;
      while (!ac.signal.aborted) {
        try {
          await readTunnelWatch(cluster, ac.signal, (status) => {
            const sample = tunnelSample(previous, status);
            previous = status;
            if (sample) {
              samples.current.push(sample);
              if (samples.current.length > MAX_TUNNEL_SAMPLES) samples.current.shift();
              setVersion((v) => v + 1);
            }
            backoff = BACKOFF_FIRST_MS;
            setState({ phase: 'ready', status, live: true });
          });
          await sleep(REOPEN_MS, ac.signal);
        } catch (err) {
          if (ac.signal.aborted) return;
          const failure =
            err instanceof ApiFailure
              ? err
              : new ApiFailure(0, '', err instanceof Error ? err.message : String(err));
          // a stream cut after statuses came keeps them shown (marked stale); a refusal replaces them
          setState((s) =>
            failure.code === 0 && s.status
              ? { ...s, live: false }
              : { phase: 'error', error: failure, live: false },
          );
          await sleep(backoff * (0.75 + Math.random() / 2), ac.signal);
          backoff = Math.min(BACKOFF_MAX_MS, backoff * 2);
        }
      }
    })();
    return () => ac.abort();
  }, [cluster]);

  const panel = notReady(
    { items: [], phase: state.phase, live: state.live, ...(state.error ? { error: state.error } : {}) },
    `the tunnel of ${cluster} (clustergateways/tunnel)`,
  );
  const s = state.status;
  const last = samples.current[samples.current.length - 1];
  return html`<section data-testid="tunnel" data-phase=${state.phase}>
    <h2>Tunnel ${!state.live && s ? html`<span class="stale" data-testid="reconnecting">reconnecting…</span>` : ''}</h2>
    ${
      panel ??
      (s
        ? html`<div class="tunnel">
            <p>
              <span data-testid="tunnel-replicas" data-server-count=${s.serverCount}>proxy-server <span class="mono">${s.serverId}</span>, one of ${s.serverCount} replica${s.serverCount === 1 ? '' : 's'}</span>
              ${' · '}
              <span data-testid="tunnel-bytes-rate" data-from=${last?.fromClusterPerSecond ?? ''} data-to=${last?.toClusterPerSecond ?? ''}>
                ${last ? `${formatRate(last.fromClusterPerSecond)} from the cluster, ${formatRate(last.toClusterPerSecond)} to it` : 'measuring…'}
              </span>
              ${' · '}
              <span data-testid="tunnel-open-streams" data-per-second=${last?.streamsPerSecond ?? ''}>${s.openStreams} open stream${s.openStreams === 1 ? '' : 's'}${last ? `, ${last.streamsPerSecond.toFixed(1)} opened/s` : ''}</span>
            </p>
            ${
              s.agents.length === 0
                ? html`<p class="panel error" data-testid="tunnel-agents" data-count="0">No agent holds a tunnel to this proxy-server.</p>`
                : html`<table class="grid" data-testid="tunnel-agents" data-count=${s.agents.length}>
                    <thead><tr><th>Agent</th><th>Connected</th><th>Open streams</th><th>Answers</th></tr></thead>
                    <tbody>${s.agents.map(
                      (a) => html`<tr data-testid=${`tunnel-agent-${a.agent}`}>
                        <td class="mono">${a.agent}${a.addon ? ` (${a.addon})` : ''}</td>
                        <td title=${a.connectedSince}>${age(a.connectedSince)}</td>
                        <td>${a.openStreams}</td>
                        <td>${a.unresponsive ? html`<span class="badge bad">silent</span>` : html`<span class="badge ok">yes</span>`}</td>
                      </tr>`,
                    )}</tbody>
                  </table>`
            }
            <p data-testid="tunnel-last-error" data-code=${s.lastError?.code ?? ''}>
              Last error: ${
                s.lastError
                  ? html`<span class="mono">${s.lastError.code}</span> ${s.lastError.message} <span class="muted">(${age(s.lastError.time)} ago)</span>`
                  : html`<span class="muted">none</span>`
              }
            </p>
            <${TunnelPlot} samples=${samples.current} version=${version} />
          </div>`
        : html`<p class="muted" data-testid="loading">Loading the tunnel of ${cluster}…</p>`)
    }
  </section>`;
}
