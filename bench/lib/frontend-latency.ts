// The latency groups of the CONNECT-frontend scenarios (frontend-scenarios.ts): a new tunnel to
// its first 1 KiB echo, with a full and a resumed TLS handshake, and how many tunnels 8 openers
// open per second (frontend-connect-rr); then 1 KiB round trips on an open tunnel
// (frontend-rr-small). Each over direct TLS, tether's frontend (HTTP/1.1 and h2) and, with --anp,
// konnectivity, interleaved; the konnectivity rows carry issue 26's goals.
import type { ConnectRrResult } from './frontend-client.ts';
import { type FrontendRun, la, REPEATS, type Side, verdict } from './frontend-run.ts';
import { machineCores } from './machine-cpu.ts';
import { median, percentile, round } from './stats.ts';

export async function runLatencyScenarios(run: FrontendRun): Promise<void> {
  const { ctx, sizes, client, paths, sides, order, cpu, anp } = run;
  const { emit, progress } = ctx;
  // ---- new connection → first 1 KiB echo ----------------------------------------------------
  await ctx.group('frontend-connect-rr', async () => {
    const json: Record<string, unknown> = { scenario: 'frontend-connect-rr' };
    const cells: string[] = [];
    let goalLine = '';
    let met = true;
    /** konnectivity's full-handshake latency, and tether's p99 against direct, for issue 26's goals */
    const vsAnp = { p50: 0, p99: 0, tetherP50: 0, tetherP99: 0, directP99: 0, h2P50: 0, h2P99: 0 };
    for (const mode of [
      { key: 'full', resume: false },
      { key: 'resumed', resume: true },
    ]) {
      interface Runs {
        p50: number[];
        p99: number[];
        resumed: number[];
        cipher: string;
        hubUs: number[];
        agentUs: number[];
        clientUs: number[];
      }
      const runs = (): Runs => ({
        p50: [],
        p99: [],
        resumed: [],
        cipher: '',
        hubUs: [],
        agentUs: [],
        clientUs: [],
      });
      const lat: Record<Side, Runs> = {
        direct: runs(),
        frontend: runs(),
        h2: runs(),
        grpc: runs(),
        anp: runs(),
      };
      for (const k of sides) await client.connectRr(paths.echo[k], 50, 1, mode.resume);
      for (let r = 0; r < REPEATS; r++) {
        for (const k of order(r)) {
          const c0 = await cpu(k);
          const res: ConnectRrResult = await client.connectRr(
            paths.echo[k],
            sizes.connectLatency,
            1,
            mode.resume,
          );
          const c1 = await cpu(k);
          const count = res.latencies.length;
          const l = lat[k];
          l.p50.push(percentile(res.latencies, 50));
          l.p99.push(percentile(res.latencies, 99));
          l.resumed.push(res.resumed / count);
          l.cipher = res.cipher;
          l.hubUs.push((c1.hub - c0.hub) / count);
          l.agentUs.push((c1.agent - c0.agent) / count);
          l.clientUs.push(res.cpuMicros / count);
          progress(
            `  connect-rr ${mode.key} ${k}: p50 ${percentile(res.latencies, 50).toFixed(0)} µs p99 ${percentile(res.latencies, 99).toFixed(0)} µs (resumed ${res.resumed}; CPU/conn hub ${((c1.hub - c0.hub) / count).toFixed(0)} µs)`,
          );
        }
      }
      const p = (k: Side, q: 'p50' | 'p99'): number => round(median(lat[k][q]), 0);
      const us = (xs: number[]): number => round(median(xs), 0);
      const s50 = round(p('frontend', 'p50') / p('direct', 'p50'), 2);
      const s99 = round(p('frontend', 'p99') / p('direct', 'p99'), 2);
      const m = mode.key;
      Object.assign(json, {
        [`${m}_ratio_vs_direct`]: round(p('direct', 'p50') / p('frontend', 'p50'), 3),
        [`${m}_p50_slowdown_vs_direct`]: s50,
        [`${m}_p99_slowdown_vs_direct`]: s99,
        [`${m}_frontend_p50_us`]: p('frontend', 'p50'),
        [`${m}_frontend_p99_us`]: p('frontend', 'p99'),
        [`${m}_direct_p50_us`]: p('direct', 'p50'),
        [`${m}_direct_p99_us`]: p('direct', 'p99'),
        [`${m}_frontend_p50_runs`]: lat.frontend.p50.map((x) => round(x, 0)),
        [`${m}_frontend_p99_runs`]: lat.frontend.p99.map((x) => round(x, 0)),
        [`${m}_direct_p50_runs`]: lat.direct.p50.map((x) => round(x, 0)),
        [`${m}_direct_p99_runs`]: lat.direct.p99.map((x) => round(x, 0)),
        [`${m}_resumed_share`]: {
          direct: median(lat.direct.resumed),
          frontend: median(lat.frontend.resumed),
        },
        // CPU per connection (load-insensitive). hub = the proxy-server alone; agent = the cluster
        // process (agent + echo target); for direct, that process runs the TLS listener + echo.
        [`${m}_hub_cpu_us_per_connection`]: us(lat.frontend.hubUs),
        [`${m}_hub_cpu_us_runs`]: lat.frontend.hubUs.map((x) => round(x, 0)),
        [`${m}_agent_cpu_us_per_connection`]: us(lat.frontend.agentUs),
        [`${m}_client_cpu_us_per_connection`]: us(lat.frontend.clientUs),
        [`${m}_direct_server_cpu_us_per_connection`]: us(lat.direct.agentUs),
        [`${m}_direct_client_cpu_us_per_connection`]: us(lat.direct.clientUs),
        cipher: { direct: lat.direct.cipher, frontend: lat.frontend.cipher },
        // over HTTP/2: a new tunnel is a new stream on an open TLS connection
        [`${m}_h2_p50_us`]: p('h2', 'p50'),
        [`${m}_h2_p99_us`]: p('h2', 'p99'),
        [`${m}_h2_hub_cpu_us_per_connection`]: us(lat.h2.hubUs),
        [`${m}_grpc_p50_us`]: p('grpc', 'p50'),
        [`${m}_grpc_p99_us`]: p('grpc', 'p99'),
      });
      if (anp)
        Object.assign(json, {
          [`${m}_konnectivity_p50_us`]: p('anp', 'p50'),
          [`${m}_konnectivity_p99_us`]: p('anp', 'p99'),
          [`${m}_konnectivity_server_cpu_us_per_connection`]: us(lat.anp.hubUs),
          [`${m}_konnectivity_agent_cpu_us_per_connection`]: us(lat.anp.agentUs),
        });
      cells.push(
        `${m}: p50 ${p('frontend', 'p50')} / p99 ${p('frontend', 'p99')} µs vs direct ${p('direct', 'p50')} / ${p('direct', 'p99')} (×${s50} / ×${s99}), CPU/conn hub ${us(lat.frontend.hubUs)} µs; h2 stream p50 ${p('h2', 'p50')} / p99 ${p('h2', 'p99')} µs`,
      );
      if (m === 'full') {
        met = s50 <= 1.6 && s99 <= 2.5;
        json.ratio_vs_direct = round(p('direct', 'p50') / p('frontend', 'p50'), 3);
        json.p50_slowdown_vs_direct = s50;
        json.p99_slowdown_vs_direct = s99;
        goalLine = `×${s50} / ×${s99}`;
        Object.assign(vsAnp, {
          p50: p('anp', 'p50'),
          p99: p('anp', 'p99'),
          tetherP50: p('frontend', 'p50'),
          tetherP99: p('frontend', 'p99'),
          directP99: p('direct', 'p99'),
          h2P50: p('h2', 'p50'),
          h2P99: p('h2', 'p99'),
        });
      }
    }
    // Opening rate: several openers at once, with resumption (what a pooled hub client does).
    const rates: Record<Side, number[]> = { direct: [], frontend: [], h2: [], grpc: [], anp: [] };
    // CPU per connection of each side's processes: hub (or konnectivity's server), the cluster side
    // (agent and targets; for direct, its TLS listener) and the client
    const perConn: Record<Side, { hub: number[]; agent: number[]; client: number[] }> = {
      direct: { hub: [], agent: [], client: [] },
      frontend: { hub: [], agent: [], client: [] },
      h2: { hub: [], agent: [], client: [] },
      grpc: { hub: [], agent: [], client: [] },
      anp: { hub: [], agent: [], client: [] },
    };
    for (let r = 0; r < REPEATS; r++) {
      for (const k of order(r)) {
        const c0 = await cpu(k);
        const res = await client.connectRr(paths.echo[k], sizes.connectRate, sizes.rateOpeners, true);
        const c1 = await cpu(k);
        const count = res.latencies.length;
        rates[k].push(count / (res.ms / 1000));
        perConn[k].hub.push((c1.hub - c0.hub) / count);
        perConn[k].agent.push((c1.agent - c0.agent) / count);
        perConn[k].client.push(res.cpuMicros / count);
        progress(`  connect-rate ${k}: ${(count / (res.ms / 1000)).toFixed(0)}/s`);
      }
    }
    const hubUs = perConn.frontend.hub;
    const agentUs = perConn.frontend.agent;
    const clientUs = perConn.frontend.client;
    const rate = Math.round(median(rates.frontend));
    const hubCap = Math.round(1e6 / median(hubUs));
    const agentCap = Math.round(1e6 / median(agentUs));
    // The most a path could open on this machine: every core busy with only its processes, at the
    // CPU per connection measured here (client included: it is the same program on every path).
    const ceiling = (k: Side): number => {
      const c = perConn[k];
      const us = median(c.hub) + median(c.agent) + median(c.client);
      return us > 0 ? Math.round((machineCores * 1e6) / us) : 0;
    };
    Object.assign(json, {
      connections_per_second: rate,
      direct_connections_per_second: Math.round(median(rates.direct)),
      h2_tunnels_per_second: Math.round(median(rates.h2)),
      grpc_tunnels_per_second: Math.round(median(rates.grpc)),
      connections_per_second_runs: rates.frontend.map(Math.round),
      direct_connections_per_second_runs: rates.direct.map(Math.round),
      openers: sizes.rateOpeners,
      // The load-insensitive form of the rate: what one core of each process opens per second at
      // the CPU cost measured here (resumed sessions). Client CPU is the third process's share.
      rate_hub_cpu_us_per_connection: round(median(hubUs), 0),
      rate_agent_cpu_us_per_connection: round(median(agentUs), 0),
      rate_client_cpu_us_per_connection: round(median(clientUs), 0),
      hub_connections_per_cpu_second: hubCap,
      agent_connections_per_cpu_second: agentCap,
      direct_rate_server_cpu_us_per_connection: round(median(perConn.direct.agent), 0),
      direct_rate_client_cpu_us_per_connection: round(median(perConn.direct.client), 0),
      machine_cores: machineCores,
      ceiling_connections_per_second: ceiling('frontend'),
      direct_ceiling_connections_per_second: ceiling('direct'),
      h2_ceiling_tunnels_per_second: ceiling('h2'),
      target: { p50_slowdown: 1.6, p99_slowdown: 2.5, connections_per_second: 1500 },
      met: met && rate >= 1500,
      loadavg_1m: la(),
    });
    emit(json, {
      scenario: 'frontend-connect-rr',
      tunnel: cells.join('; '),
      baseline: `${rate}/s opened (h2: ${json.h2_tunnels_per_second}/s) vs direct ${json.direct_connections_per_second}/s (${sizes.rateOpeners} openers); per core: hub ${hubCap}/s, agent ${agentCap}/s; ceiling on ${machineCores} cores ${json.ceiling_connections_per_second}/s (direct ${json.direct_ceiling_connections_per_second}/s)`,
      ratio: `full handshake ${goalLine}`,
      target: 'p50 ≤ ×1.6, p99 ≤ ×2.5, ≥ 1500/s',
      result: `${verdict(met)} latency; ${verdict(rate >= 1500)} rate`,
    });
    if (!anp) return;
    const anpRate = Math.round(median(rates.anp));
    const latMet = vsAnp.tetherP50 <= vsAnp.p50 && vsAnp.tetherP99 <= 2 * vsAnp.directP99;
    const rateMet = rate >= anpRate && rate >= 1000;
    // the same goals for a client that speaks HTTP/2 to the frontend (a new tunnel is a new stream)
    const h2Rate = Math.round(median(rates.h2));
    const h2Met =
      vsAnp.h2P50 <= vsAnp.p50 && vsAnp.h2P99 <= 2 * vsAnp.directP99 && h2Rate >= anpRate && h2Rate >= 1000;
    emit(
      {
        scenario: 'frontend-connect-rr-vs-konnectivity',
        p50_ratio_vs_konnectivity: round(vsAnp.tetherP50 / vsAnp.p50, 2),
        frontend_p50_us: vsAnp.tetherP50,
        konnectivity_p50_us: vsAnp.p50,
        frontend_p99_us: vsAnp.tetherP99,
        konnectivity_p99_us: vsAnp.p99,
        direct_p99_us: vsAnp.directP99,
        connections_per_second: rate,
        konnectivity_connections_per_second: anpRate,
        konnectivity_connections_per_second_runs: rates.anp.map(Math.round),
        ceiling_connections_per_second: ceiling('frontend'),
        konnectivity_ceiling_connections_per_second: ceiling('anp'),
        direct_ceiling_connections_per_second: ceiling('direct'),
        konnectivity_rate_server_cpu_us_per_connection: round(median(perConn.anp.hub), 0),
        konnectivity_rate_agent_cpu_us_per_connection: round(median(perConn.anp.agent), 0),
        konnectivity_rate_client_cpu_us_per_connection: round(median(perConn.anp.client), 0),
        h2_p50_us: vsAnp.h2P50,
        h2_p99_us: vsAnp.h2P99,
        h2_tunnels_per_second: h2Rate,
        h2_met: h2Met,
        target: {
          p50: '≤ konnectivity',
          p99: '≤ 2 × direct',
          connections_per_second: '≥ konnectivity and ≥ 1000',
        },
        met: latMet && rateMet,
        loadavg_1m: la(),
      },
      {
        scenario: 'frontend-connect-rr vs konnectivity',
        tunnel: `p50 ${vsAnp.tetherP50} / p99 ${vsAnp.tetherP99} µs; ${rate}/s, ceiling ${ceiling('frontend')}/s; over h2 p50 ${vsAnp.h2P50} / p99 ${vsAnp.h2P99} µs; ${h2Rate}/s`,
        baseline: `konnectivity p50 ${vsAnp.p50} / p99 ${vsAnp.p99} µs; ${anpRate}/s, ceiling ${ceiling('anp')}/s (direct p99 ${vsAnp.directP99} µs)`,
        ratio: `p50 ×${round(vsAnp.tetherP50 / vsAnp.p50, 2)}; rate ×${round(rate / anpRate, 2)} (h2: ×${round(vsAnp.h2P50 / vsAnp.p50, 2)}; ×${round(h2Rate / anpRate, 2)})`,
        target: 'p50 ≤ konnectivity, p99 ≤ 2 × direct; rate ≥ konnectivity, ≥ 1000/s',
        result: `HTTP/1.1: ${verdict(latMet)} latency, ${verdict(rateMet)} rate; h2: ${verdict(h2Met)}`,
      },
    );
  });

  // ---- 1 KiB round trip on an open connection ------------------------------------------------
  await ctx.group('frontend-rr-small', async () => {
    const out: Record<Side, { p50: number[]; p99: number[] }> = {
      direct: { p50: [], p99: [] },
      frontend: { p50: [], p99: [] },
      h2: { p50: [], p99: [] },
      grpc: { p50: [], p99: [] },
      anp: { p50: [], p99: [] },
    };
    const hubUs: number[] = [];
    const agentUs: number[] = [];
    for (const k of sides) await client.rr(paths.echo[k], 0, sizes.rrWarmup);
    for (let r = 0; r < REPEATS; r++) {
      for (const k of order(r)) {
        const c0 = await cpu(k);
        const lat = await client.rr(paths.echo[k], sizes.rrIterations, 50);
        const c1 = await cpu(k);
        if (k === 'frontend') {
          hubUs.push((c1.hub - c0.hub) / (sizes.rrIterations + 50));
          agentUs.push((c1.agent - c0.agent) / (sizes.rrIterations + 50));
        }
        out[k].p50.push(percentile(lat, 50));
        out[k].p99.push(percentile(lat, 99));
        progress(
          `  rr ${k}: p50 ${percentile(lat, 50).toFixed(0)} µs p99 ${percentile(lat, 99).toFixed(0)} µs`,
        );
      }
    }
    const p = (k: Side, q: 'p50' | 'p99'): number => round(median(out[k][q]), 1);
    const s99 = round(p('frontend', 'p99') / p('direct', 'p99'), 2);
    emit(
      {
        scenario: 'frontend-rr-small',
        ratio_vs_direct: round(p('direct', 'p50') / p('frontend', 'p50'), 3),
        p50_slowdown_vs_direct: round(p('frontend', 'p50') / p('direct', 'p50'), 2),
        p99_slowdown_vs_direct: s99,
        frontend_p50_us: p('frontend', 'p50'),
        frontend_p99_us: p('frontend', 'p99'),
        h2_p50_us: p('h2', 'p50'),
        h2_p99_us: p('h2', 'p99'),
        grpc_p50_us: p('grpc', 'p50'),
        grpc_p99_us: p('grpc', 'p99'),
        direct_p50_us: p('direct', 'p50'),
        direct_p99_us: p('direct', 'p99'),
        frontend_p50_runs: out.frontend.p50.map((x) => round(x, 0)),
        frontend_p99_runs: out.frontend.p99.map((x) => round(x, 0)),
        direct_p50_runs: out.direct.p50.map((x) => round(x, 0)),
        direct_p99_runs: out.direct.p99.map((x) => round(x, 0)),
        // CPU per round trip (includes a connection setup spread over the iterations)
        hub_cpu_us_per_round_trip: round(median(hubUs), 1),
        agent_cpu_us_per_round_trip: round(median(agentUs), 1),
        iterations: sizes.rrIterations,
        request_bytes: 1024,
        target: { p99_slowdown: 2 },
        met: s99 <= 2,
        loadavg_1m: la(),
      },
      {
        scenario: 'frontend-rr-small',
        tunnel: `p50 ${p('frontend', 'p50')} / p99 ${p('frontend', 'p99')} µs; CPU/round trip hub ${round(median(hubUs), 1)} µs agent ${round(median(agentUs), 1)} µs`,
        baseline: `direct ${p('direct', 'p50')} / ${p('direct', 'p99')} µs`,
        ratio: `p99 ×${s99}`,
        target: 'p99 ≤ ×2',
        result: verdict(s99 <= 2),
      },
    );
    if (anp)
      emit(
        {
          scenario: 'frontend-rr-small-vs-konnectivity',
          frontend_p50_us: p('frontend', 'p50'),
          frontend_p99_us: p('frontend', 'p99'),
          konnectivity_p50_us: p('anp', 'p50'),
          konnectivity_p99_us: p('anp', 'p99'),
          konnectivity_p99_slowdown_vs_direct: round(p('anp', 'p99') / p('direct', 'p99'), 2),
          loadavg_1m: la(),
        },
        {
          scenario: 'frontend-rr-small vs konnectivity',
          tunnel: `p50 ${p('frontend', 'p50')} / p99 ${p('frontend', 'p99')} µs`,
          baseline: `konnectivity ${p('anp', 'p50')} / ${p('anp', 'p99')} µs`,
          ratio: `p50 ×${round(p('frontend', 'p50') / p('anp', 'p50'), 2)} / p99 ×${round(p('frontend', 'p99') / p('anp', 'p99'), 2)}`,
          target: '(goal: p99 ≤ ×2 direct, above)',
          result: '—',
        },
      );
  });
}
