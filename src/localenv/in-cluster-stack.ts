// The tether part of `tether up` on real nodes: tether installed into the local clusters exactly as
// a user installs it into real ones — `tether init` on the hub (the image's Deployments, a NodePort
// agent endpoint on the hub node), `tether join` on every managed cluster (the klusterlet-agent
// Deployment — registration and work — reaching the hub only through squid from its firewalled
// node), acceptance the way `tether accept` does it, then tether's own agents as addons: per cluster
// an AddOnDeploymentConfig whose proxyConfig is squid, and `tether addon enable` of
// managed-serviceaccount and cluster-proxy with it (their agents run inside the klusterlet agent,
// which reaches the hub through squid; on clusters listed in addonAgentPodsOn as pods in
// open-cluster-management-agent-addon, through squid too) and of cluster-gateway (the
// gateway's ManagedServiceAccount and RBAC); once every addon is Available, the gateway
// kubeconfigs. The CLI verbs run as child processes, so this path is the CLI's path.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import {
  type AddOnDeploymentConfig,
  addOnDeploymentConfigResource,
  type ManagedClusterAddOn,
  managedClusterAddOnResource,
} from '../api/index.ts';
import { TetherError } from '../errors.ts';
import { isConditionTrue, ResourceClient } from '../kube/index.ts';
import { pollUntil } from '../wait.ts';
import { type Environment, startEnvironment } from './environment.ts';
import { writeGatewayKubeconfigs } from './gateway-stack.ts';
import { type HubServicesInfo, hubServiceAccess, hubServiceInitArgs } from './hub-services.ts';
import { installSecondHub } from './second-hub.ts';
import { AGENT_NODE_PORT, acceptUntilAvailable, tether } from './tether-cli-steps.ts';
import type { ControlPlaneInfo } from './types.ts';

/** The addons that carry tether's own agents; the ones listed first take the proxy config. */
const proxiedAddons = ['managed-serviceaccount', 'cluster-proxy'];
const addonsWithoutAgent = ['cluster-gateway'];

/** The AddOnDeploymentConfig in each cluster namespace that sends the addon agents through squid. */
export const addonProxyConfigName = 'tether-up-proxy';

export interface InClusterOptions {
  hub: ControlPlaneInfo;
  clusters: ControlPlaneInfo[];
  /** the tether image every node has imported */
  imageRef: string;
  /** the hub apiserver as managed pods reach it through squid */
  hubApiserverUrl: string;
  /** the hub node's address (the agent endpoint's NodePort listens there) */
  hubNodeAddress: string;
  /** squid's URL for pods on a managed cluster's node */
  squidUrlFor(cluster: string): string;
  /**
   * hosted mode: hosted cluster → hosting cluster (full names). The hosted cluster is joined with
   * `tether join --mode hosted` on the hosting cluster, whose node reaches the hosted apiserver on
   * its own host end (hostAddressOf).
   */
  hostedOn?: Record<string, string>;
  /** a managed cluster's host end (where its node reaches the host) */
  hostAddressOf?(cluster: string): string;
  /** where the gateway kubeconfigs go */
  kubeconfigDir: string;
  /** where the CA files of init go */
  workDir: string;
  timeoutMs: number;
  /** more `tether join` flags for every cluster (tests set the agent's periods short with them) */
  joinArgs?: string[];
  /**
   * indices of the clusters whose add-on agents run as their own pods (`join --no-in-process-addons`);
   * on the others (default all) the klusterlet agent hosts managed-serviceaccount and cluster-proxy
   */
  addonAgentPodsOn?: readonly number[];
  progress?: (message: string) => void;
  signal?: AbortSignal;
}

export async function installTetherInCluster(
  o: InClusterOptions,
): Promise<{ kubeconfigs: Record<string, string>; hubServices: HubServicesInfo }> {
  const progress = o.progress ?? (() => {});
  const { signal } = o;
  const hubCa = join(o.workDir, 'hub-ca.crt');
  const serverCa = join(o.workDir, 'proxy-server-ca.crt');
  const timeout = `${Math.ceil(o.timeoutMs / 1000)}s`;
  progress('tether init: the hub controllers, proxy-server and gateway as Deployments on the hub node…');
  const initOut = await tether(
    [
      'init',
      `--kubeconfig=${o.hub.kubeconfigPath}`,
      `--image=${o.imageRef}`,
      '--image-pull-policy=Never',
      `--hub-apiserver=${o.hubApiserverUrl}`,
      `--proxy-server-host=${o.hubNodeAddress}`,
      `--agent-endpoint-node-port=${AGENT_NODE_PORT}`,
      `--ca-out=${hubCa}`,
      `--proxy-server-ca-out=${serverCa}`,
      '--bootstrap-token-expiration=1h',
      // the CONNECT / gRPC frontend and the user-server reachable from this machine
      ...hubServiceInitArgs(o.hubNodeAddress),
      '--wait',
      `--timeout=${timeout}`,
    ],
    signal,
  );
  const token = /--hub-token (\S+)/.exec(initOut)?.[1];
  if (!token) throw new TetherError('TETHER_PROCESS_FAILED', `tether init printed no join line:\n${initOut}`);
  const hubKc = new KubeConfig();
  hubKc.loadFromFile(o.hub.kubeconfigPath);
  const hubServices = await hubServiceAccess({ hubKc, hubNodeAddress: o.hubNodeAddress, dir: o.workDir });
  progress(
    `tether join: the klusterlet-agent on ${o.clusters.map((c) => c.name).join(', ')}, through squid…`,
  );
  await Promise.all(
    o.clusters.map(async (cluster, index) => {
      const hosting = o.clusters.find((c) => c.name === o.hostedOn?.[cluster.name]);
      await tether(
        [
          'join',
          `--hub-token=${token}`,
          `--hub-apiserver=${o.hubApiserverUrl}`,
          `--ca-file=${hubCa}`,
          // the tunnel and the ManagedServiceAccount agent come as addons (below), hosted by the
          // klusterlet agent unless this cluster runs them as pods
          '--no-serviceaccount',
          ...(o.addonAgentPodsOn?.includes(index) ? ['--no-in-process-addons'] : []),
          `--proxy-url=${o.squidUrlFor(hosting?.name ?? cluster.name)}`,
          `--cluster-name=${cluster.name}`,
          ...(hosting
            ? [
                '--mode=hosted',
                `--managed-cluster-kubeconfig=${hostedKubeconfig(o, cluster, hosting)}`,
                `--kubeconfig=${hosting.kubeconfigPath}`,
              ]
            : [`--kubeconfig=${cluster.kubeconfigPath}`]),
          `--image=${o.imageRef}`,
          '--image-pull-policy=Never',
          ...(o.joinArgs ?? []),
        ],
        signal,
      );
      await acceptUntilAvailable(hubKc, cluster.name, o.timeoutMs, signal);
    }),
  );
  progress(
    `tether addon enable: ${[...proxiedAddons, ...addonsWithoutAgent].join(', ')} on every cluster, through squid…`,
  );
  await Promise.all(o.clusters.map((cluster) => enableBuiltinAddons(o, hubKc, cluster.name)));
  progress('the gateway kubeconfigs…');
  const { kubeconfigs } = await writeGatewayKubeconfigs({
    hubKc,
    clusters: o.clusters.map((c) => c.name),
    kubeconfigDir: o.kubeconfigDir,
    timeoutMs: o.timeoutMs,
    signal,
  });
  return { kubeconfigs, hubServices };
}

/**
 * The hosted cluster's admin kubeconfig as its agent on `hosting`'s node reaches it: the hosted
 * apiserver binds every host address and names the hosting node's host end (node-environment.ts).
 */
function hostedKubeconfig(o: InClusterOptions, hosted: ControlPlaneInfo, hosting: ControlPlaneInfo): string {
  const hostAddress = o.hostAddressOf?.(hosting.name);
  if (!hostAddress) throw new Error(`internal: no host address for ${hosting.name}`);
  const kc = new KubeConfig();
  kc.loadFromFile(hosted.kubeconfigPath);
  const current = kc.getCurrentCluster();
  const port = new URL(hosted.apiserverUrl).port;
  kc.clusters = kc.clusters.map((c) =>
    c.name === current?.name ? { ...c, server: `https://${hostAddress}:${port}` } : c,
  );
  const path = join(o.workDir, `${hosted.name}.hosted.kubeconfig`);
  writeFileSync(path, kc.exportConfig(), { mode: 0o600 });
  return path;
}

/**
 * On one cluster: the AddOnDeploymentConfig that points the addon agents at squid, tether's own
 * addons enabled with the real CLI (the proxy config only where the addon runs an agent), and the
 * wait until each is Available.
 */
async function enableBuiltinAddons(o: InClusterOptions, hubKc: KubeConfig, cluster: string): Promise<void> {
  // a hosted cluster's agents run on its hosting cluster's node
  const squid = o.squidUrlFor(o.hostedOn?.[cluster] ?? cluster);
  await new ResourceClient<AddOnDeploymentConfig>(hubKc, addOnDeploymentConfigResource).apply(
    {
      apiVersion: 'addon.open-cluster-management.io/v1alpha1',
      kind: 'AddOnDeploymentConfig',
      metadata: { name: addonProxyConfigName, namespace: cluster },
      // the agents dial the hub (and the proxy-server) only through squid; their own cluster directly
      spec: {
        proxyConfig: {
          httpProxy: squid,
          httpsProxy: squid,
          noProxy: 'localhost,127.0.0.1,.svc,.cluster.local',
        },
      },
    },
    { fieldManager: 'tether-up', force: true },
  );
  const kubeconfig = `--kubeconfig=${o.hub.kubeconfigPath}`;
  await tether(
    [
      'addon',
      'enable',
      `--names=${proxiedAddons.join(',')}`,
      `--clusters=${cluster}`,
      `--config=addon.open-cluster-management.io/addondeploymentconfigs:${cluster}/${addonProxyConfigName}`,
      kubeconfig,
    ],
    o.signal,
  );
  await tether(
    ['addon', 'enable', `--names=${addonsWithoutAgent.join(',')}`, `--clusters=${cluster}`, kubeconfig],
    o.signal,
  );
  const addons = new ResourceClient<ManagedClusterAddOn>(hubKc, managedClusterAddOnResource);
  let pending: string[] = [];
  await pollUntil(
    async () => {
      const { items } = await addons.list({ namespace: cluster });
      const available = new Set(
        items
          .filter((a) => isConditionTrue(a.status?.conditions ?? [], 'Available'))
          .map((a) => a.metadata.name),
      );
      pending = [...proxiedAddons, ...addonsWithoutAgent].filter((n) => !available.has(n));
      return pending.length === 0;
    },
    {
      timeoutMs: o.timeoutMs,
      intervalMs: 500,
      description: `the addons of ${cluster} to be Available (see tether get addon --cluster ${cluster} -o wide)`,
      signal: o.signal,
    },
  ).catch((err: Error) => {
    throw new TetherError('TETHER_PROCESS_FAILED', `${err.message}; not Available: ${pending.join(', ')}`);
  });
}

/**
 * `tether up` on real nodes: the environment with a node per cluster (environment.ts), then tether
 * installed into it (installTetherInCluster). On failure or abort everything is stopped again.
 */
export async function startInClusterEnvironment(opts: {
  clusters: number;
  dir: string;
  progress?: (message: string) => void;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** prepended to every cluster's (and node's) name (environment.ts) */
  namePrefix?: string;
  /** more `tether join` flags for every cluster (installTetherInCluster) */
  joinArgs?: string[];
  /** clusters (by index) whose add-on agents run as pods (installTetherInCluster) */
  addonAgentPodsOn?: readonly number[];
  /** hosted mode: hosted cluster → hosting cluster, without the prefix (e.g. { cluster2: 'cluster1' }) */
  hostedOn?: Record<string, string>;
  /** 2: a second hub, hub2, with cluster1 joined to it too (second-hub.ts) */
  hubs?: 1 | 2;
}): Promise<Environment> {
  const env = await startEnvironment({
    clusters: opts.clusters,
    dir: opts.dir,
    progress: opts.progress,
    nodes: true,
    ...(opts.hostedOn ? { hostedOn: opts.hostedOn } : {}),
    ...(opts.hubs ? { hubs: opts.hubs } : {}),
    namePrefix: opts.namePrefix,
    signal: opts.signal,
  });
  try {
    const hubNode = env.nodes?.[env.hub.name];
    if (!hubNode || !env.squid || !env.image || !env.hubApiserverUrlForNodes)
      throw new Error('internal: a real-node environment without its hub node, squid or image');
    const squid = env.squid;
    const { kubeconfigs, hubServices } = await installTetherInCluster({
      hub: env.hub,
      clusters: env.clusters,
      imageRef: env.image.ref,
      hubApiserverUrl: env.hubApiserverUrlForNodes,
      hubNodeAddress: hubNode.network.nodeAddress,
      squidUrlFor: (c) => squid.urlFor(c),
      kubeconfigDir: env.dir,
      workDir: join(env.dir, 'state'),
      timeoutMs: opts.timeoutMs ?? 180_000,
      joinArgs: opts.joinArgs,
      ...(opts.addonAgentPodsOn ? { addonAgentPodsOn: opts.addonAgentPodsOn } : {}),
      ...(opts.hostedOn
        ? {
            hostedOn: Object.fromEntries(
              Object.entries(opts.hostedOn).map(([hosted, on]) => [
                `${opts.namePrefix ?? ''}${hosted}`,
                `${opts.namePrefix ?? ''}${on}`,
              ]),
            ),
            hostAddressOf: (name: string) => {
              const node = env.nodes?.[name];
              if (!node) throw new Error(`internal: no node ${name}`);
              return node.network.hostAddress;
            },
          }
        : {}),
      progress: opts.progress,
      signal: opts.signal,
    });
    env.gatewayKubeconfigs = kubeconfigs;
    const cluster1 = env.clusters[0];
    if (env.hub2 && cluster1) {
      const hub2Node = env.nodes?.[env.hub2.name];
      if (!hub2Node || !env.hub2ApiserverUrlForNodes) throw new Error('internal: hub2 without its node');
      await installSecondHub({
        hub2: env.hub2,
        hub2ApiserverUrl: env.hub2ApiserverUrlForNodes,
        hub2NodeAddress: hub2Node.network.nodeAddress,
        clusters: [cluster1],
        imageRef: env.image.ref,
        squidUrlFor: (c) => squid.urlFor(c),
        workDir: join(env.dir, 'state'),
        timeoutMs: opts.timeoutMs ?? 180_000,
        joinArgs: opts.joinArgs,
        progress: opts.progress,
        signal: opts.signal,
      });
    }
    env.hubServices = hubServices;
    const stopEnvironment = env.stop;
    env.stop = async () => {
      await stopEnvironment();
      for (const path of Object.values(kubeconfigs)) rmSync(path, { force: true });
    };
    return env;
  } catch (err) {
    await env.stop();
    opts.signal?.throwIfAborted();
    throw err;
  }
}
