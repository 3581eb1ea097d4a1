// Footprint benchmark: what an idle tether process costs. On real local control planes (a hub and
// cluster1, no squid) it starts, as separate child processes like in production:
//   hub            `tether hub` (registration, MSA, work collector; leader election on)
//   proxy-server   `tether proxy-server --hub-kubeconfig …` (watches ManagedClusters, TokenReview/SAR)
//   agent          `tether agent` for cluster1 with --proxy-server (registration + work + MSA +
//                  proxy-agent), already joined: a warm-up run joins and is accepted first, so the
//                  measured runs are restarts of a joined agent, measured once it is Available
//   proxy-agent    `tether proxy-agent` for cluster1 holding a tunnel to that proxy-server
//   proxy-server-nohub  `tether proxy-server --insecure-skip-hub-checks`: the same without the
//                  Kubernetes client, i.e. what a proxy-server with a lighter hub client would cost
// and two more baselines for the floor: `node` importing @kubernetes/client-node beside the same
// HTTP server (node-client-node), and that with tether's idle memory trim (node-client-node-trim,
// src/cli/idle-memory.ts, which the daemon verbs run unless TETHER_IDLE_MEMORY_TRIM=0),
// and reports per process: spawn → /readyz 200 (ms, and CPU seconds until then), RSS after a settle
// period, RSS and V8 heap after a forced GC, idle CPU, and the scripts it compiled. Baselines in the
// same run: `node -e` idling (bare Node RSS) and `node -e` to a listening HTTP server answering
// /readyz (bare startup); every figure is also given as a ratio against them.
//
//   npm run bench -- footprint [--quick] [--runs=3] [--settle=SECONDS] [--node-flags="--max-semi-space-size=1"]
//                               [--compile-cache] [--no-inspector] [--no-idle-trim] [--heap-top=N] [--tether-bin=PATH]
//                               [--bundle]
//
// --node-flags goes to every child, the baselines included. --compile-cache gives the tether
// children NODE_COMPILE_CACHE (a directory in the run's temp dir, filled by the warm-up run): Node
// then reuses its TypeScript-stripped and compiled code instead of loading the type stripper.
// --no-inspector runs every child without `--inspect` (which holds a few MB itself): RSS and CPU
// only, the figures to hold against the RSS goals. --no-idle-trim runs the tether children with
// TETHER_IDLE_MEMORY_TRIM=0 (their young generation stays as large as start-up made it).
// --heap-top=N takes a heap snapshot of each process in the last run and prints its N largest
// kinds of objects (module source shows up as `string`, bytecode and metadata as `code`/`hidden`). --tether-bin runs another checkout's bin/tether.js
// (e.g. `git archive <commit> | tar -x -C DIR` with node_modules linked) for a before/after.
// --real-nodes measures the path users take instead (bench/footprint-nodes.ts): `tether up` with
// one managed cluster on real nodes, every tether process summed per side, after the add-ons are
// Available and everything idled a minute.
// --hub-scale measures `tether hub` while simulated clusters are added (bench/footprint-hub-scale.ts):
// hub memory per 100 managed clusters, up to 1 000.
// --bundle builds the production bundle (src/image/bundle.ts, `npm run bundle`) and runs the tether
// children from it: the same verbs, minified into one file set instead of ~900 modules.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ManagedCluster, ManagedClusterCondition, managedClusterResource } from '../src/api/index.ts';
import { buildBundle } from '../src/image/bundle.ts';
import { isConditionTrue, loadKubeconfig, ResourceClient } from '../src/kube/index.ts';
import { startEnvironment } from '../src/localenv/environment.ts';
import { freePort, localChildEnv, tetherBin } from '../src/localenv/process.ts';
import { createCertificateAuthority, issueCertificate, loadCertificateAuthority } from '../src/pki/index.ts';
import {
  BOOTSTRAP_USER,
  bootstrapKubeconfigYaml,
  createBootstrapToken,
  ensureBootstrapIdentity,
  writeBootstrapSecret,
} from '../src/registration/bootstrap.ts';
import { approveClusterCsrs } from '../src/registration/hub/index.ts';
import { agentSubject } from '../src/tunnel/identity.ts';
import { pollUntil } from '../src/wait.ts';
import { type Kind, MB, printHeapKinds, report, type Sample, verbOf } from './lib/footprint-report.ts';
import { type HeapKind, summarizeHeapSnapshot, takeHeapSnapshot } from './lib/heap-snapshot.ts';
import { inspectorUrl } from './lib/inspector-gc.ts';
import { measureIdle, type Started, spawnUntilReady } from './lib/process-footprint.ts';
import { type BenchOptions, flag, round } from './lib/stats.ts';

const CLUSTER = 'cluster1';

/**
 * `node --input-type=module -e` source: import the Kubernetes client (its main entry, as src/kube
 * does), optionally start tether's idle trim, then answer /readyz like the HTTP baseline.
 */
function clientNodeBaseline(port: number, trim: boolean): string {
  const repo = new URL('..', import.meta.url);
  const client = new URL('node_modules/@kubernetes/client-node/dist/index.js', repo).href;
  const idle = new URL('src/cli/idle-memory.ts', repo).href;
  return [
    // The compile cache in its default place, as tether's bin enables it (it costs client-node
    // about 10 MB of RSS and spares idle-memory.ts the TypeScript stripper's 18 MB).
    `(await import('node:module')).enableCompileCache();`,
    `await import(${JSON.stringify(client)});`,
    trim ? `(await import(${JSON.stringify(idle)})).trimMemoryWhenIdle();` : '',
    `(await import('node:http')).createServer((q, s) => s.end('ok')).listen(${port}, '127.0.0.1');`,
  ].join('\n');
}

function writeFile(dir: string, name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text, { mode: 0o600 });
  return p;
}

export async function run(opts: BenchOptions): Promise<void> {
  if (flag(opts.args, 'hub-scale') !== undefined) {
    const { runHubScale } = await import('./footprint-hub-scale.ts');
    await runHubScale(opts);
    return;
  }
  if (flag(opts.args, 'real-nodes') !== undefined) {
    const { runOnRealNodes } = await import('./footprint-nodes.ts');
    await runOnRealNodes(opts);
    return;
  }
  const runs = Number(flag(opts.args, 'runs') ?? 3);
  const settleMs = Number(flag(opts.args, 'settle') ?? (opts.quick ? 4 : 10)) * 1000;
  const nodeFlags = (flag(opts.args, 'node-flags') ?? '').split(/\s+/).filter(Boolean);
  const compileCache = flag(opts.args, 'compile-cache') !== undefined;
  const inspect = flag(opts.args, 'no-inspector') === undefined;
  const idleTrim = flag(opts.args, 'no-idle-trim') === undefined;
  const heapTop = Number(flag(opts.args, 'heap-top') ?? 0);
  const bundled = flag(opts.args, 'bundle') !== undefined ? (await buildBundle()).entry : undefined;
  const bin = flag(opts.args, 'tether-bin') || bundled || tetherBin;
  const dir = mkdtempSync(join(tmpdir(), 'tether-bench-footprint-'));
  const progress = (msg: string): void => console.error(`[footprint] ${msg}`);
  const env = localChildEnv({
    ...process.env,
    TETHER_LOG_LEVEL: 'info',
    ...(idleTrim ? {} : { TETHER_IDLE_MEMORY_TRIM: '0' }),
    ...(compileCache ? { NODE_COMPILE_CACHE: join(dir, 'compile-cache') } : {}),
  });
  const samples: Sample[] = [];
  const live: Started[] = [];
  const stopLive = async (): Promise<void> => {
    await Promise.all(live.splice(0).map((s) => s.proc.stop(10_000)));
  };
  const heapKinds = new Map<Kind, HeapKind[]>();
  const measure = async (kind: Kind, started: Started, lastRun: boolean): Promise<void> => {
    const footprint = await measureIdle(started, settleMs);
    const url = inspectorUrl(started.proc.tail(40));
    if (heapTop > 0 && lastRun && url) {
      const kinds = summarizeHeapSnapshot(await takeHeapSnapshot(url));
      heapKinds.set(kind, kinds.sort((a, b) => b.size - a.size).slice(0, heapTop));
    }
    samples.push({ kind, started, footprint, load: loadavg().map((x) => round(x, 2)) });
    progress(
      `${kind}: rss ${round(footprint.rss / MB, 1)} MB, after GC ${round(footprint.rssAfterGc / MB, 1)} MB, startup ${Math.round(started.startupMs)} ms`,
    );
  };

  try {
    for (let r = 0; r < runs; r++) {
      const ops = await freePort();
      const idle = await spawnUntilReady({
        name: 'node-http',
        // An HTTP server on the ops port only so the same readiness poll applies; it answers 200 to all.
        args: ['-e', `require('http').createServer((q,s)=>s.end('ok')).listen(${ops},'127.0.0.1')`],
        opsPort: ops,
        logFile: join(dir, 'node-http.log'),
        nodeFlags,
        inspect,
        timeoutMs: 20_000,
      });
      live.push(idle);
      await measure('node-http', idle, r === runs - 1);
      await stopLive();
      for (const kind of ['node-client-node', 'node-client-node-trim'] as const) {
        const port = await freePort();
        const withClient = await spawnUntilReady({
          name: kind,
          args: ['--input-type=module', '-e', clientNodeBaseline(port, kind === 'node-client-node-trim')],
          opsPort: port,
          logFile: join(dir, `${kind}.log`),
          nodeFlags,
          inspect,
          timeoutMs: 60_000,
        });
        live.push(withClient);
        await measure(kind, withClient, r === runs - 1);
        await stopLive();
      }
    }

    progress('starting hub + cluster1 control planes');
    const cps = await startEnvironment({
      clusters: 1,
      dir: join(dir, 'env'),
      tunnel: false,
      progress: () => {},
    });
    try {
      const [cluster1] = cps.clusters;
      if (!cluster1) throw new Error('no cluster1');
      const hubKc = loadKubeconfig(cps.hub.kubeconfigPath);
      const pki = join(dir, 'pki');
      mkdirSync(pki, { mode: 0o700 });
      const ca = await loadCertificateAuthority(
        readFileSync(cps.hub.caCertPath, 'utf8'),
        readFileSync(cps.hub.caKeyPath, 'utf8'),
      );
      const hubCa = writeFile(pki, 'hub-ca.crt', ca.certPem);
      const serving = await issueCertificate(ca, {
        commonName: 'tether-proxy-server',
        usage: 'server',
        ipAddresses: ['127.0.0.1'],
      });
      const clientCa = await createCertificateAuthority('bench-proxy-client-ca');
      const agentCert = await issueCertificate(ca, {
        ...agentSubject(CLUSTER, 'bench-proxy-agent'),
        usage: 'client',
      });
      await ensureBootstrapIdentity(hubKc);
      const { token } = await createBootstrapToken(hubKc, 3600);
      await writeBootstrapSecret(
        loadKubeconfig(cluster1.kubeconfigPath),
        bootstrapKubeconfigYaml({ hubApiserver: cps.hub.apiserverUrl, hubCaPem: ca.certPem, token }),
      );
      const clusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
      const accept = async (): Promise<void> => {
        if (await clusters.get(CLUSTER)) await approveClusterCsrs(hubKc, CLUSTER);
      };
      const available = async (): Promise<boolean> => {
        const c = (await clusters.get(CLUSTER))?.status?.conditions ?? [];
        return (
          isConditionTrue(c, ManagedClusterCondition.Joined) &&
          isConditionTrue(c, ManagedClusterCondition.Available)
        );
      };
      const tether = async (
        kind: Kind,
        args: (ops: number) => string[],
        whileWaiting?: () => Promise<void>,
      ) => {
        const ops = await freePort();
        const s = await spawnUntilReady({
          name: kind,
          args: [bin, verbOf(kind), ...args(ops)],
          opsPort: ops,
          logFile: join(dir, `${kind}.log`),
          env,
          nodeFlags,
          inspect,
          timeoutMs: 120_000,
          whileWaiting,
        });
        live.push(s);
        return s;
      };
      const agentPort = await freePort();
      const hubArgs = (ops: number) => [
        `--kubeconfig=${cps.hub.kubeconfigPath}`,
        `--auto-approved-csr-users=${BOOTSTRAP_USER}`,
        `--ops-port=${ops}`,
      ];
      const serverArgs = (ops: number) => [
        '--bind-address=127.0.0.1',
        `--agent-port=${agentPort}`,
        '--connect-port=0',
        `--ops-port=${ops}`,
        `--tls-cert-file=${writeFile(pki, 'server.crt', serving.certPem)}`,
        `--tls-key-file=${writeFile(pki, 'server.key', serving.keyPem)}`,
        `--agent-ca-file=${hubCa}`,
        `--proxy-client-ca-file=${writeFile(pki, 'client-ca.crt', clientCa.certPem)}`,
        `--hub-kubeconfig=${cps.hub.kubeconfigPath}`,
      ];
      const noHubAgentPort = await freePort();
      const noHubServerArgs = (ops: number) => [
        ...serverArgs(ops)
          .filter((a) => !a.startsWith('--hub-kubeconfig='))
          .map((a) => (a.startsWith('--agent-port=') ? `--agent-port=${noHubAgentPort}` : a)),
        '--insecure-skip-hub-checks',
      ];
      const managed = new URL(cluster1.apiserverUrl);
      const agentArgs = (ops: number) => [
        `--cluster-name=${CLUSTER}`,
        '--agent-name=bench',
        `--kubeconfig=${cluster1.kubeconfigPath}`,
        `--proxy-server=127.0.0.1:${agentPort}`,
        `--hub-ca-file=${hubCa}`,
        `--ops-port=${ops}`,
      ];
      const proxyAgentArgs = (ops: number) => [
        `--cluster-name=${CLUSTER}`,
        '--agent-id=bench-proxy-agent',
        `--proxy-server=127.0.0.1:${agentPort}`,
        `--cert-file=${writeFile(pki, 'agent.crt', agentCert.certPem)}`,
        `--key-file=${writeFile(pki, 'agent.key', agentCert.keyPem)}`,
        `--hub-ca-file=${hubCa}`,
        `--kube-apiserver=${managed.hostname}:${managed.port}`,
        `--ops-port=${ops}`,
      ];

      progress('warm-up: hub, proxy-server, the agent joins and is accepted, proxy-agent');
      await tether('hub', hubArgs);
      await tether('proxy-server', serverArgs);
      await tether('agent', agentArgs, accept);
      await pollUntil(available, { timeoutMs: 60_000, intervalMs: 250, description: `${CLUSTER} Available` });
      await tether('proxy-agent', proxyAgentArgs);
      await stopLive();

      for (let r = 0; r < runs; r++) {
        progress(`run ${r + 1}/${runs}`);
        const hub = await tether('hub', hubArgs);
        const server = await tether('proxy-server', serverArgs);
        const agent = await tether('agent', agentArgs);
        await pollUntil(available, {
          timeoutMs: 60_000,
          intervalMs: 250,
          description: `${CLUSTER} Available`,
        });
        const proxyAgent = await tether('proxy-agent', proxyAgentArgs);
        // One at a time: the inspector sessions and GCs of one do not land in another's figures.
        await measure('hub', hub, r === runs - 1);
        await measure('proxy-server', server, r === runs - 1);
        await measure('agent', agent, r === runs - 1);
        await measure('proxy-agent', proxyAgent, r === runs - 1);
        await stopLive();
        // What the proxy-server costs without its hub client: the floor a lighter hub client could reach.
        await measure(
          'proxy-server-nohub',
          await tether('proxy-server-nohub', noHubServerArgs),
          r === runs - 1,
        );
        await stopLive();
      }
    } finally {
      await stopLive();
      await cps.stop();
    }
    report(samples, { runs, settleMs, nodeFlags, compileCache, inspect, idleTrim, bin });
    printHeapKinds(heapKinds);
  } finally {
    await stopLive();
    rmSync(dir, { recursive: true, force: true });
  }
}
