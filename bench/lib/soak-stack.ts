// The processes a soak measures, as production runs them: `tether proxy-server`, one `tether
// proxy-agent` (through squid when given) for a soak cluster whose kube-apiserver is an existing
// managed control plane, and `tether gateway --register` dialling through the proxy-server's CONNECT
// frontend — each its own process, so /proc/<pid> tells what each holds. Around them: the soak
// cluster's ManagedCluster and gateway credential Secret on the hub (a hand-made token where the MSA
// agent would project one), the gateway's RBAC on the managed cluster, and the hub grant for the
// proxy-client identity. stop() removes what it created and puts back an APIService it displaced.
// Used by bench/soak.ts and test/e2e/gateway-soak.test.ts; it never touches objects it did not make.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import {
  type ManagedCluster,
  managedClusterResource,
  managedServiceAccountLabel,
} from '../../src/api/index.ts';
import { gatewayApiServiceName, gatewayManagedClusterRbac } from '../../src/gateway/index.ts';
import { type KubeObject, ResourceClient } from '../../src/kube/index.ts';
import { freePort, SupervisedProcess, tetherBin } from '../../src/localenv/process.ts';
import { waitReady } from '../../src/localenv/ready.ts';
import {
  grantManagedClusterProxy,
  PROXY_CLIENT_ROLE,
  PROXY_CLIENT_USER,
} from '../../src/localenv/tunnel-stack.ts';
import type { ControlPlaneInfo } from '../../src/localenv/types.ts';
import {
  createCertificateAuthority,
  issueCertificate,
  loadCertificateAuthority,
} from '../../src/pki/index.ts';
import { agentSubject } from '../../src/tunnel/identity.ts';
import { inspectorUrl } from './inspector-gc.ts';

export interface SoakStackOptions {
  /** scratch directory for certificates and process logs (the caller removes it) */
  dir: string;
  hub: ControlPlaneInfo;
  /** the managed control plane the soak cluster's agent forwards kube-apiserver:443 to */
  managed: ControlPlaneInfo;
  /** name of the soak cluster on the hub (a DNS label) */
  cluster: string;
  /** squid (or any CONNECT proxy) the agent dials out through; direct when absent */
  squidUrl?: string;
  /** proxy-server --max-tunnels-per-caller (the gateway is one caller: one tunnel per watch) */
  maxTunnelsPerCaller?: number;
  /** start gateway and proxy-server with `--inspect=127.0.0.1:0` so heapAfterGc() can reach them */
  inspect?: boolean;
  readyTimeoutMs?: number;
}

export interface SoakProcess {
  name: string;
  pid: number;
  /** inspector URL (with `inspect`) */
  inspector?: string;
  logFile: string;
  tail(lines?: number): string;
  running: boolean;
}

export interface SoakStack {
  cluster: string;
  proxyServer: SoakProcess;
  agent: SoakProcess;
  gateway: SoakProcess;
  /** path of `rest` (e.g. `/api/v1/...`) through the hub's ClusterGateway proxy for the soak cluster */
  gatewayPath(rest: string): string;
  stop(): Promise<void>;
}

const GATEWAY_NS = 'tether-soak';
const apiServices = {
  group: 'apiregistration.k8s.io',
  version: 'v1',
  plural: 'apiservices',
  kind: 'APIService',
  namespaced: false,
} as const;

function rbacClient(kc: KubeConfig, kind: string): ResourceClient {
  return new ResourceClient(kc, {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: kind === 'ClusterRole' ? 'clusterroles' : 'clusterrolebindings',
    kind,
    namespaced: false,
  });
}

function described(p: SupervisedProcess, inspect: boolean): SoakProcess {
  return {
    name: p.name,
    pid: p.pid ?? 0,
    inspector: inspect ? inspectorUrl(p.tail(40)) : undefined,
    logFile: p.logFile,
    tail: (lines) => p.tail(lines),
    get running() {
      return p.running;
    },
  };
}

/** Starts proxy-server, agent and gateway for `opts.cluster`; on failure undoes what it did. */
export async function startSoakStack(opts: SoakStackOptions): Promise<SoakStack> {
  const dir = opts.dir;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = (name: string, content: string): string => {
    const p = join(dir, name);
    writeFileSync(p, content, { mode: 0o600 });
    return p;
  };
  const timeoutMs = opts.readyTimeoutMs ?? 60_000;
  const hubKc = new KubeConfig();
  hubKc.loadFromFile(opts.hub.kubeconfigPath);
  const managedKc = new KubeConfig();
  managedKc.loadFromFile(opts.managed.kubeconfigPath);
  const hubCore = hubKc.makeApiClient(CoreV1Api);
  const managedCore = managedKc.makeApiClient(CoreV1Api);
  const managedClusters = new ResourceClient<ManagedCluster>(hubKc, managedClusterResource);
  const apis = new ResourceClient<KubeObject & { spec?: Record<string, unknown> }>(hubKc, apiServices);
  const processes: SupervisedProcess[] = [];
  const undo: Array<() => Promise<unknown>> = [];
  const stop = async (): Promise<void> => {
    for (const p of [...processes].reverse()) await p.stop(5000);
    for (const u of undo.splice(0).reverse()) await u().catch(() => {});
  };
  const inspectArgs = opts.inspect ? ['--inspect=127.0.0.1:0'] : [];

  try {
    const ca = await loadCertificateAuthority(
      readFileSync(opts.hub.caCertPath, 'utf8'),
      readFileSync(opts.hub.caKeyPath, 'utf8'),
    );
    const hubCaPath = file('hub-ca.crt', ca.certPem);
    const serving = await issueCertificate(ca, {
      commonName: 'tether-soak-proxy-server',
      usage: 'server',
      dnsNames: ['localhost'],
      ipAddresses: ['127.0.0.1'],
    });
    const proxyClientCa = await createCertificateAuthority('tether-soak-proxy-client-ca');
    const proxyClient = await issueCertificate(proxyClientCa, {
      commonName: PROXY_CLIENT_USER,
      usage: 'client',
    });
    await grantManagedClusterProxy(hubKc, PROXY_CLIENT_USER, PROXY_CLIENT_ROLE);

    // The soak cluster on the hub: accepted, its client config the managed apiserver.
    const managedCaPem = readFileSync(opts.managed.caCertPath, 'utf8');
    await managedClusters.create({
      metadata: { name: opts.cluster },
      spec: {
        hubAcceptsClient: true,
        managedClusterClientConfigs: [
          { url: opts.managed.apiserverUrl, caBundle: Buffer.from(managedCaPem).toString('base64') },
        ],
      },
    });
    undo.push(() => managedClusters.delete(opts.cluster, undefined, { ignoreNotFound: true }));
    await hubCore.createNamespace({ body: { metadata: { name: opts.cluster } } });
    undo.push(() => hubCore.deleteNamespace({ name: opts.cluster }));

    // The gateway's identity on the managed cluster: a ServiceAccount that may impersonate, hub
    // admins cluster-admin there (what tether up's ManifestWork applies), and a token for it.
    const sa = `gateway-${opts.cluster}`;
    const nsExisted = await managedCore
      .readNamespace({ name: GATEWAY_NS })
      .then(() => true)
      .catch(() => false);
    if (!nsExisted) {
      await managedCore.createNamespace({ body: { metadata: { name: GATEWAY_NS } } });
      undo.push(() => managedCore.deleteNamespace({ name: GATEWAY_NS }));
    }
    await managedCore.createNamespacedServiceAccount({
      namespace: GATEWAY_NS,
      body: { metadata: { name: sa } },
    });
    undo.push(() => managedCore.deleteNamespacedServiceAccount({ name: sa, namespace: GATEWAY_NS }));
    for (const obj of gatewayManagedClusterRbac({ namespace: GATEWAY_NS, serviceAccount: sa })) {
      const client = rbacClient(managedKc, obj.kind ?? '');
      const name = obj.metadata?.name ?? '';
      if (await client.get(name)) continue; // someone else's: leave it as it is
      await client.create(obj);
      undo.push(() => client.delete(name, undefined, { ignoreNotFound: true }));
    }
    const token =
      (
        await managedCore.createNamespacedServiceAccountToken({
          name: sa,
          namespace: GATEWAY_NS,
          body: { spec: { audiences: [], expirationSeconds: 4 * 3600 } },
        })
      ).status?.token ?? '';
    await hubCore.createNamespacedSecret({
      namespace: opts.cluster,
      body: {
        metadata: { name: 'tether-gateway', labels: { [managedServiceAccountLabel]: 'true' } },
        stringData: { token, 'ca.crt': managedCaPem },
      },
    });

    const [agentPort, connectPort, serverOps, agentOps, gatewayOps] = await Promise.all([
      freePort(),
      freePort(),
      freePort(),
      freePort(),
      freePort(),
    ]);
    const server = new SupervisedProcess({
      name: 'soak/proxy-server',
      command: process.execPath,
      logFile: join(dir, 'proxy-server.log'),
      args: [
        ...inspectArgs,
        tetherBin,
        'proxy-server',
        '--server-id=soak-proxy-server',
        '--bind-address=127.0.0.1',
        `--agent-port=${agentPort}`,
        `--connect-port=${connectPort}`,
        `--ops-port=${serverOps}`,
        `--tls-cert-file=${file('proxy-server.crt', serving.certPem)}`,
        `--tls-key-file=${file('proxy-server.key', serving.keyPem)}`,
        `--agent-ca-file=${hubCaPath}`,
        `--proxy-client-ca-file=${file('proxy-client-ca.crt', proxyClientCa.certPem)}`,
        `--hub-kubeconfig=${opts.hub.kubeconfigPath}`,
        ...(opts.maxTunnelsPerCaller ? [`--max-tunnels-per-caller=${opts.maxTunnelsPerCaller}`] : []),
      ],
    });
    processes.push(server);
    await waitReady(server, serverOps, timeoutMs);

    const agentCert = await issueCertificate(ca, {
      ...agentSubject(opts.cluster, 'soak-agent'),
      usage: 'client',
    });
    const apiserver = new URL(opts.managed.apiserverUrl);
    const agent = new SupervisedProcess({
      name: 'soak/proxy-agent',
      command: process.execPath,
      logFile: join(dir, 'proxy-agent.log'),
      args: [
        tetherBin,
        'proxy-agent',
        `--cluster-name=${opts.cluster}`,
        '--agent-id=soak-agent',
        `--proxy-server=127.0.0.1:${agentPort}`,
        `--cert-file=${file('agent.crt', agentCert.certPem)}`,
        `--key-file=${file('agent.key', agentCert.keyPem)}`,
        `--hub-ca-file=${hubCaPath}`,
        `--kube-apiserver=${apiserver.hostname}:${apiserver.port}`,
        ...(opts.squidUrl ? [`--proxy-url=${opts.squidUrl}`] : []),
        `--ops-port=${agentOps}`,
      ],
    });
    processes.push(agent);
    await waitReady(agent, agentOps, timeoutMs);

    // The APIService is a singleton: put back whatever pointed elsewhere, or remove ours.
    const previous = await apis.get(gatewayApiServiceName);
    undo.push(async () => {
      if (previous?.spec) {
        await apis.apply(
          { metadata: { name: gatewayApiServiceName }, spec: previous.spec },
          { fieldManager: 'tether-gateway', force: true },
        );
      } else {
        await apis.delete(gatewayApiServiceName, undefined, { ignoreNotFound: true });
      }
      await hubCore.deleteNamespacedService({ name: `gateway-${opts.cluster}`, namespace: GATEWAY_NS });
    });
    const gateway = new SupervisedProcess({
      name: 'soak/gateway',
      command: process.execPath,
      logFile: join(dir, 'gateway.log'),
      args: [
        ...inspectArgs,
        tetherBin,
        'gateway',
        '--register',
        `--kubeconfig=${opts.hub.kubeconfigPath}`,
        '--port=0',
        `--ops-port=${gatewayOps}`,
        `--service-namespace=${GATEWAY_NS}`,
        `--service-name=gateway-${opts.cluster}`,
        `--connect-url=https://127.0.0.1:${connectPort}`,
        `--connect-ca-file=${hubCaPath}`,
        `--connect-cert-file=${file('proxy-client.crt', proxyClient.certPem)}`,
        `--connect-key-file=${file('proxy-client.key', proxyClient.keyPem)}`,
      ],
    });
    processes.push(gateway);
    await waitReady(gateway, gatewayOps, timeoutMs);

    return {
      cluster: opts.cluster,
      proxyServer: described(server, opts.inspect === true),
      agent: described(agent, false),
      gateway: described(gateway, opts.inspect === true),
      gatewayPath: (rest) =>
        `/apis/cluster.core.oam.dev/v1alpha1/clustergateways/${opts.cluster}/proxy${rest}`,
      stop,
    };
  } catch (err) {
    const logs = processes.map((p) => `--- ${p.name} ---\n${p.tail(15)}`).join('\n');
    await stop();
    throw new Error(`soak stack for ${opts.cluster} did not start: ${(err as Error).message}\n${logs}`);
  }
}
