// The tunnel part of a local environment: a real squid forward proxy, `tether proxy-server` for the
// hub and one `tether proxy-agent` per managed cluster (child processes, as in production), with
// agents reaching the hub only through squid. Agents get the registration identity
// (system:open-cluster-management:<cluster>:<agent>) from the hub's cluster CA — minted here in
// 'tunnel' mode, obtained through the CSR flow by `tether agent` in 'full' mode. Hub services get
// a client certificate from a proxy-client CA of their own (never the CA that signs agents), and
// hub RBAC that lets that identity `get managedclusters/proxy`. The proxy-server watches the hub's
// ManagedClusters, so in 'tunnel' mode each cluster's ManagedCluster is created here, accepted.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { type ManagedCluster, managedClusterResource } from '../api/index.ts';
import { isAlreadyExists, loadKubeconfig, ResourceClient } from '../kube/index.ts';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  issueCertificate,
  loadCertificateAuthority,
} from '../pki/index.ts';
import { agentSubject } from '../tunnel/identity.ts';
import { freePort, SupervisedProcess, tetherBin } from './process.ts';
import { waitReady } from './ready.ts';
import { startRegisteredAgents } from './registered-agents.ts';
import { type Squid, startSquid } from './squid.ts';
import type { ControlPlaneInfo, TunnelInfo } from './types.ts';

export interface TunnelStack extends TunnelInfo {
  squidUrl: string;
  squidAccessLogPath: string;
  proxyServerAddress: string;
  connectFrontendUrl: string;
  /** client certificate hub services can use on the CONNECT frontend */
  proxyClientCertPath: string;
  proxyClientKeyPath: string;
  hubCaPath: string;
  /** the tether processes (proxy-server, hub controllers, agents, gateway), in start order */
  processes: SupervisedProcess[];
  squidProcess: SupervisedProcess;
  stop(): Promise<void>;
}

/** The user of the hub-service client certificate `tether up` hands to the gateway and tests. */
export const PROXY_CLIENT_USER = 'tether-hub-service';
/** The hub ClusterRole (and binding) that lets PROXY_CLIENT_USER reach every cluster's tunnel. */
export const PROXY_CLIENT_ROLE = 'tether:proxy-client';

/** Grants `user` exactly `get managedclusters/proxy` on the hub (idempotent). */
export async function grantManagedClusterProxy(hub: KubeConfig, user: string, name: string): Promise<void> {
  const rbac = hub.makeApiClient(RbacAuthorizationV1Api);
  const ignoreExists = (err: unknown): void => {
    if (!isAlreadyExists(err)) throw err;
  };
  await rbac
    .createClusterRole({
      body: {
        metadata: { name },
        rules: [
          {
            apiGroups: ['cluster.open-cluster-management.io'],
            resources: ['managedclusters/proxy'],
            verbs: ['get'],
          },
        ],
      },
    })
    .catch(ignoreExists);
  await rbac
    .createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
      },
    })
    .catch(ignoreExists);
}

/** Creates `cluster`'s ManagedCluster on the hub, accepted, as the hub admin would (if absent). */
async function acceptManagedCluster(hub: KubeConfig, cluster: ControlPlaneInfo): Promise<void> {
  const clusters = new ResourceClient<ManagedCluster>(hub, managedClusterResource);
  const caPem = readFileSync(cluster.caCertPath, 'utf8');
  await clusters
    .create({
      apiVersion: 'cluster.open-cluster-management.io/v1',
      kind: 'ManagedCluster',
      metadata: { name: cluster.name },
      spec: {
        hubAcceptsClient: true,
        managedClusterClientConfigs: [
          { url: cluster.apiserverUrl, caBundle: Buffer.from(caPem).toString('base64') },
        ],
      },
    })
    .catch((err: unknown) => {
      if (!isAlreadyExists(err)) throw err;
    });
}

export function writeFile(dir: string, name: string, content: string): string {
  const p = join(dir, name);
  writeFileSync(p, content, { mode: 0o600 });
  return p;
}

export async function startTunnelStack(opts: {
  dir: string;
  hub: ControlPlaneInfo;
  clusters: ControlPlaneInfo[];
  readyTimeoutMs?: number;
  /**
   * 'tunnel': standalone proxy-agents with certificates minted here (the e2e tests' environment);
   * 'full': `tether hub` and one `tether agent` per cluster that join through squid, get their
   * certificate through the CSR flow and run the proxy-agent with it (what `tether up` runs).
   */
  mode?: 'tunnel' | 'full';
  /** abandons the start: what has started is stopped and the promise rejects */
  signal?: AbortSignal;
}): Promise<TunnelStack> {
  const signal = opts.signal;
  const dir = join(opts.dir, 'tunnel');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const timeoutMs = opts.readyTimeoutMs ?? 30_000;
  const ca: CertificateAuthority = await loadCertificateAuthority(
    readFileSync(opts.hub.caCertPath, 'utf8'),
    readFileSync(opts.hub.caKeyPath, 'utf8'),
  );
  const hubCaPath = writeFile(dir, 'hub-ca.crt', ca.certPem);
  const serving = await issueCertificate(ca, {
    commonName: 'tether-proxy-server',
    usage: 'server',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
  });
  // Hub services' client certificates come from a CA of their own: the frontend never trusts the CA
  // that signs agent identities.
  const proxyClientCa = await createCertificateAuthority('tether-proxy-client-ca');
  const proxyClientCaPath = writeFile(dir, 'proxy-client-ca.crt', proxyClientCa.certPem);
  writeFile(dir, 'proxy-client-ca.key', proxyClientCa.keyPem);
  const client = await issueCertificate(proxyClientCa, { commonName: PROXY_CLIENT_USER, usage: 'client' });
  const hubKc = loadKubeconfig(opts.hub.kubeconfigPath);
  await grantManagedClusterProxy(hubKc, PROXY_CLIENT_USER, PROXY_CLIENT_ROLE);
  const processes: SupervisedProcess[] = [];
  let squid: Squid | undefined;
  const stop = async (): Promise<void> => {
    await Promise.all([...processes].reverse().map((p) => p.stop(5000)));
    await squid?.stop();
  };
  try {
    // squid runs as user proxy and needs a directory it can enter: the OS temp dir, not our 0700 one.
    squid = await startSquid({ signal });
    const [agentPort, connectPort, serverOps] = await Promise.all([freePort(), freePort(), freePort()]);
    const server = new SupervisedProcess({
      name: 'hub/proxy-server',
      command: process.execPath,
      logFile: join(dir, 'proxy-server.log'),
      args: [
        tetherBin,
        'proxy-server',
        '--server-id=hub-proxy-server-0',
        '--bind-address=127.0.0.1',
        `--agent-port=${agentPort}`,
        `--connect-port=${connectPort}`,
        `--ops-port=${serverOps}`,
        `--tls-cert-file=${writeFile(dir, 'proxy-server.crt', serving.certPem)}`,
        `--tls-key-file=${writeFile(dir, 'proxy-server.key', serving.keyPem)}`,
        `--agent-ca-file=${hubCaPath}`,
        `--proxy-client-ca-file=${proxyClientCaPath}`,
        // admin here: the proxy-server needs list/watch managedclusters, tokenreviews, subjectaccessreviews
        `--hub-kubeconfig=${opts.hub.kubeconfigPath}`,
      ],
    });
    processes.push(server);
    server.readiness = () => waitReady(server, serverOps, timeoutMs);
    await waitReady(server, serverOps, timeoutMs, signal);
    if (opts.mode === 'full') {
      await startRegisteredAgents({
        dir,
        hub: opts.hub,
        clusters: opts.clusters,
        squidUrl: squid.url,
        proxyServerAddress: `127.0.0.1:${agentPort}`,
        hubCaPath,
        processes,
        timeoutMs: Math.max(timeoutMs, 60_000),
        signal,
      });
    } else {
      await Promise.all(
        opts.clusters.map(async (cluster) => {
          // The proxy-server serves only clusters the hub accepted: accept each one first.
          await acceptManagedCluster(hubKc, cluster);
          const cert = await issueCertificate(ca, {
            ...agentSubject(cluster.name, 'proxy-agent'),
            usage: 'client',
          });
          const ops = await freePort();
          const apiserver = new URL(cluster.apiserverUrl);
          const agent = new SupervisedProcess({
            name: `${cluster.name}/proxy-agent`,
            command: process.execPath,
            logFile: join(dir, `${cluster.name}-proxy-agent.log`),
            args: [
              tetherBin,
              'proxy-agent',
              `--cluster-name=${cluster.name}`,
              '--agent-id=proxy-agent',
              `--proxy-server=127.0.0.1:${agentPort}`,
              `--cert-file=${writeFile(dir, `${cluster.name}-agent.crt`, cert.certPem)}`,
              `--key-file=${writeFile(dir, `${cluster.name}-agent.key`, cert.keyPem)}`,
              `--hub-ca-file=${hubCaPath}`,
              `--kube-apiserver=${apiserver.hostname}:${apiserver.port}`,
              `--proxy-url=${squid?.url}`,
              `--ops-port=${ops}`,
            ],
          });
          processes.push(agent);
          agent.readiness = () => waitReady(agent, ops, timeoutMs);
          await waitReady(agent, ops, timeoutMs, signal);
        }),
      );
    }
    return {
      squidUrl: squid.url,
      squidAccessLogPath: squid.accessLogPath,
      proxyServerAddress: `127.0.0.1:${agentPort}`,
      connectFrontendUrl: `https://127.0.0.1:${connectPort}`,
      proxyClientCertPath: writeFile(dir, 'proxy-client.crt', client.certPem),
      proxyClientKeyPath: writeFile(dir, 'proxy-client.key', client.keyPem),
      hubCaPath,
      processes,
      squidProcess: squid.process,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
