// The gateway part of `tether up`: `tether gateway --register` as its own process (dialling the
// clusters through the proxy-server's CONNECT frontend), one ManagedServiceAccount `tether-gateway`
// per cluster, and a ManifestWork per cluster that lets that ServiceAccount impersonate hub callers
// there and makes the hub's admins admins there — all through the same OCM APIs a user would use. Writes `<dir>/<cluster>-gateway.kubeconfig`.
// On real nodes the cluster-gateway addon provides the ManagedServiceAccount and the RBAC instead
// (src/addon/builtin): there only the kubeconfigs are written (writeGatewayKubeconfigs).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { addonAgentNamespace, type Manifest } from '../api/index.ts';
import { defaultGatewayMsaName, gatewayKubeconfig, gatewayManagedClusterRbac } from '../gateway/index.ts';
import { createManagedServiceAccount } from '../serviceaccount/index.ts';
import { pollUntil } from '../wait.ts';
import { createManifestWork } from '../work/hub/index.ts';
import { freePort, SupervisedProcess, tetherBin } from './process.ts';
import { waitReady } from './ready.ts';
import type { ControlPlaneInfo, TunnelInfo } from './types.ts';

/**
 * What the gateway's ServiceAccount may do on each managed cluster: impersonate (it acts as the hub
 * caller, `cluster:hub:<user>`), and the hub's admins (`cluster:hub:system:masters`) are
 * cluster-admin there, so the hub admin kubeconfig works through the gateway as before. Nobody else
 * gets rights on a managed cluster until its RBAC names them.
 */
export function gatewayRbacManifests(serviceAccount: string, namespace: string): Manifest[] {
  return gatewayManagedClusterRbac({ serviceAccount, namespace }) as Manifest[];
}

export async function startGatewayStack(opts: {
  dir: string;
  kubeconfigDir: string;
  hub: ControlPlaneInfo;
  clusters: ControlPlaneInfo[];
  tunnel: TunnelInfo;
  processes: SupervisedProcess[];
  timeoutMs: number;
  /** abandons the start (the caller stops the processes it was handed) */
  signal?: AbortSignal;
}): Promise<{ kubeconfigs: Record<string, string> }> {
  const signal = opts.signal;
  const hubKc = new KubeConfig();
  hubKc.loadFromFile(opts.hub.kubeconfigPath);
  // a fixed serving port (not 0): a restarted gateway serves where its APIService already points
  const [port, ops] = await Promise.all([freePort(), freePort()]);
  const gateway = new SupervisedProcess({
    name: 'hub/gateway',
    command: process.execPath,
    logFile: join(opts.dir, 'gateway.log'),
    args: [
      tetherBin,
      'gateway',
      '--register',
      `--kubeconfig=${opts.hub.kubeconfigPath}`,
      `--port=${port}`,
      `--ops-port=${ops}`,
      `--connect-url=${opts.tunnel.connectFrontendUrl}`,
      `--connect-ca-file=${opts.tunnel.hubCaPath}`,
      `--connect-cert-file=${opts.tunnel.proxyClientCertPath}`,
      `--connect-key-file=${opts.tunnel.proxyClientKeyPath}`,
    ],
  });
  opts.processes.push(gateway);
  gateway.readiness = () => waitReady(gateway, ops, opts.timeoutMs);
  const [, access] = await Promise.all([
    waitReady(gateway, ops, opts.timeoutMs, signal),
    provisionGatewayAccess({
      hubKc,
      clusters: opts.clusters.map((c) => c.name),
      kubeconfigDir: opts.kubeconfigDir,
      timeoutMs: opts.timeoutMs,
      signal,
    }),
  ]);
  return { kubeconfigs: access.kubeconfigs };
}

/**
 * What the gateway needs per cluster, through the OCM APIs a user would use: a ManagedServiceAccount
 * `tether-gateway` and a ManifestWork with its RBAC there; then writes
 * `<kubeconfigDir>/<cluster>-gateway.kubeconfig` and waits until a list through the gateway works.
 */
export async function provisionGatewayAccess(opts: {
  hubKc: KubeConfig;
  clusters: string[];
  kubeconfigDir: string;
  timeoutMs: number;
  signal?: AbortSignal;
}): Promise<{ kubeconfigs: Record<string, string> }> {
  const { hubKc } = opts;
  const names = opts.clusters;
  await Promise.all([
    createManagedServiceAccount(hubKc, { name: defaultGatewayMsaName, clusters: names }),
    createManifestWork(hubKc, {
      name: 'tether-gateway-rbac',
      clusters: names,
      manifests: gatewayRbacManifests(defaultGatewayMsaName, addonAgentNamespace),
      overwrite: true,
    }),
  ]);
  return writeGatewayKubeconfigs(opts);
}

/**
 * Writes `<kubeconfigDir>/<cluster>-gateway.kubeconfig` for each cluster and waits until a list
 * through the gateway works (the ManagedServiceAccount token is on the hub and the RBAC applied,
 * by whoever provides them).
 */
export async function writeGatewayKubeconfigs(opts: {
  hubKc: KubeConfig;
  clusters: string[];
  kubeconfigDir: string;
  timeoutMs: number;
  signal?: AbortSignal;
}): Promise<{ kubeconfigs: Record<string, string> }> {
  const { hubKc, signal } = opts;
  const kubeconfigs: Record<string, string> = {};
  await Promise.all(
    opts.clusters.map(async (name) => {
      const yaml = gatewayKubeconfig(hubKc, name);
      const path = join(opts.kubeconfigDir, `${name}-gateway.kubeconfig`);
      writeFileSync(path, yaml, { mode: 0o600 });
      kubeconfigs[name] = path;
      const viaGateway = new KubeConfig();
      viaGateway.loadFromString(yaml);
      const core = viaGateway.makeApiClient(CoreV1Api);
      // Ready once the token is projected and the RBAC work applied: a list works end to end.
      await pollUntil(async () => (await core.listNamespace({ limit: 1 })).items.length > 0, {
        timeoutMs: opts.timeoutMs,
        intervalMs: 300,
        description: `kubectl through the gateway to ${name} (ManagedServiceAccount token + RBAC)`,
        signal,
      });
    }),
  );
  return { kubeconfigs };
}
