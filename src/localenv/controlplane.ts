// A real local Kubernetes control plane: etcd + kube-apiserver + kube-controller-manager on free
// loopback ports, with generated PKI (cluster CA that the KCM signs CSRs with, serving certs,
// service-account keys for TokenRequest, front-proxy CA for aggregated APIs), RBAC authorization and
// an admin kubeconfig. Owns its directory: stop() kills the processes and removes the directory
// unless it was handed in by the caller with keepDir.
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { Agent, request } from 'undici';
import { installAddonConfigAdmission } from '../addon/hub/config/admission.ts';
import { ProcessFailedError, TetherError } from '../errors.ts';
import { createCertificateAuthority, issueCertificate } from '../pki/index.ts';
import { installHubAdmission } from '../registration/hub/admission-policies.ts';
import { pollUntil } from '../wait.ts';
import { type ControlPlaneBinaries, ensureBinaries } from './binaries.ts';
import { installCrds } from './crds.ts';
import { writeKubeconfigFile } from './kubeconfig-file.ts';
import { freePort, SupervisedProcess } from './process.ts';
import type { ControlPlaneInfo } from './types.ts';

/**
 * KCM controllers we run: enough for namespaces, GC, CSRs and service accounts to behave for real,
 * and for the aggregated ClusterRoles (view, edit, admin) to have rules, as users grant them.
 */
const KCM_CONTROLLERS = [
  'namespace-controller',
  'garbage-collector-controller',
  'certificatesigningrequest-signing-controller',
  'certificatesigningrequest-approving-controller',
  'certificatesigningrequest-cleaner-controller',
  'serviceaccount-controller',
  'serviceaccount-token-controller',
  'root-ca-certificate-publisher-controller',
  'clusterrole-aggregation-controller',
];

export const SERVICE_CLUSTER_IP_RANGE = '10.0.0.0/24';
export const FRONT_PROXY_CLIENT_NAME = 'front-proxy-client';

export interface StartControlPlaneOptions {
  /** parent directory for this control plane's own directory (default: the OS temp dir) */
  baseDir?: string;
  binaries?: ControlPlaneBinaries;
  /** deadline for all three processes to become ready (ms); default 120 s */
  readyTimeoutMs?: number;
  /**
   * CRDs installed before the KCM starts, so its garbage collector and namespace controller know
   * their kinds from the first discovery pass (otherwise up to 30 s later).
   */
  crds?: V1CustomResourceDefinition[];
  /** install the hub admission policies (registration's, add-on configuration's) after the CRDs (the hub control plane) */
  hubAdmission?: boolean;
  /** keep the directory on stop (logs for debugging) */
  keepDir?: boolean;
  /** abandons the start: what has started is stopped and the promise rejects with the abort reason */
  signal?: AbortSignal;
  /**
   * A real node will join (node.ts): the apiserver also listens on `hostAddress` (the host end of
   * the node's veth; it binds 0.0.0.0, so 127.0.0.1 keeps working), advertises it for the
   * `kubernetes` Service (lease endpoint reconciler), has it as a SAN, authorizes kubelets
   * (Node,RBAC + NodeRestriction) and reaches them with its own client certificate, routes
   * aggregated APIs to endpoint (pod) IPs; the KCM runs all its controllers (Deployments,
   * endpoints, node lifecycle). Without it nothing changes.
   */
  nodeNetwork?: { hostAddress: string };
  /**
   * more addresses the apiserver's certificate names: a hosting cluster's host end, from which the
   * hosted agent on that cluster's node reaches this apiserver (hosted mode)
   */
  extraIpSans?: string[];
}

export interface ControlPlane extends ControlPlaneInfo {
  /** every process is gone and (unless keepDir) the directory removed when this resolves */
  stop(): Promise<void>;
  /** called each time etcd, kube-apiserver or the KCM dies while we did not ask it to */
  onFailure(handler: (description: string) => void): void;
  readonly pids: number[];
  /** etcd, kube-apiserver, kube-controller-manager: respawnable with the same flags, files and data */
  readonly processes: readonly SupervisedProcess[];
}

interface Pki {
  dir: string;
  files: Record<string, string>;
}

async function writePki(
  dir: string,
  name: string,
  nodeHostAddress?: string,
  extraIpSans: readonly string[] = [],
): Promise<Pki> {
  const pkiDir = join(dir, 'pki');
  mkdirSync(pkiDir, { recursive: true, mode: 0o700 });
  const files: Record<string, string> = {};
  const put = (file: string, content: string): void => {
    const path = join(pkiDir, file);
    writeFileSync(path, content, { mode: 0o600 });
    files[file] = path;
  };
  const [ca, frontProxyCa] = await Promise.all([
    createCertificateAuthority(`tether-${name}-ca`),
    createCertificateAuthority(`tether-${name}-front-proxy-ca`),
  ]);
  put('ca.crt', ca.certPem);
  put('ca.key', ca.keyPem);
  put('front-proxy-ca.crt', frontProxyCa.certPem);
  put('front-proxy-ca.key', frontProxyCa.keyPem);
  const [apiserver, admin, kcmClient, kcmServing, frontProxyClient] = await Promise.all([
    issueCertificate(ca, {
      commonName: 'kube-apiserver',
      usage: 'server',
      dnsNames: [
        name,
        'localhost',
        'kubernetes',
        'kubernetes.default',
        'kubernetes.default.svc',
        'kubernetes.default.svc.cluster.local',
      ],
      ipAddresses: ['127.0.0.1', '10.0.0.1', ...(nodeHostAddress ? [nodeHostAddress] : []), ...extraIpSans],
    }),
    issueCertificate(ca, { commonName: 'tether-admin', organizations: ['system:masters'], usage: 'client' }),
    issueCertificate(ca, { commonName: 'system:kube-controller-manager', usage: 'client' }),
    issueCertificate(ca, {
      commonName: 'kube-controller-manager',
      usage: 'server',
      dnsNames: ['localhost'],
      ipAddresses: ['127.0.0.1'],
    }),
    issueCertificate(frontProxyCa, { commonName: FRONT_PROXY_CLIENT_NAME, usage: 'client' }),
  ]);
  put('apiserver.crt', apiserver.certPem);
  put('apiserver.key', apiserver.keyPem);
  put('admin.crt', admin.certPem);
  put('admin.key', admin.keyPem);
  put('kcm-client.crt', kcmClient.certPem);
  put('kcm-client.key', kcmClient.keyPem);
  put('kcm-serving.crt', kcmServing.certPem);
  put('kcm-serving.key', kcmServing.keyPem);
  put('front-proxy-client.crt', frontProxyClient.certPem);
  put('front-proxy-client.key', frontProxyClient.keyPem);
  if (nodeHostAddress) {
    const kubeletClient = await issueCertificate(ca, {
      commonName: 'kube-apiserver-kubelet-client',
      organizations: ['system:masters'],
      usage: 'client',
    });
    put('apiserver-kubelet-client.crt', kubeletClient.certPem);
    put('apiserver-kubelet-client.key', kubeletClient.keyPem);
  }
  const sa = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  put('sa.key', sa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  put('sa.pub', sa.publicKey.export({ type: 'spki', format: 'pem' }).toString());
  return { dir: pkiDir, files };
}

function pkiFile(pki: Pki, file: string): string {
  const p = pki.files[file];
  if (!p) throw new Error(`internal: no PKI file ${file}`);
  return p;
}

/** Polls an HTTPS health endpoint until it answers 200 or the process dies. */
async function waitHealthy(
  proc: SupervisedProcess,
  url: string,
  tls: { ca?: string; cert?: string; key?: string } | undefined,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<void> {
  const dispatcher = new Agent({ connect: { ...tls, timeout: 2000 } });
  try {
    await pollUntil(
      async () => {
        if (!proc.running) {
          throw new ProcessFailedError(
            `${proc.name} exited before it became ready (log: ${proc.logFile})`,
            proc.tail(),
          );
        }
        const res = await request(url, { dispatcher, headersTimeout: 5000, bodyTimeout: 5000 });
        await res.body.text();
        return res.statusCode === 200;
      },
      { timeoutMs, intervalMs: 250, description: `${proc.name} at ${url}`, signal },
    ).catch((err: unknown) => {
      if (err instanceof ProcessFailedError || signal?.aborted) throw err;
      if (!proc.running)
        throw new ProcessFailedError(
          `${proc.name} exited before it became ready (log: ${proc.logFile})`,
          proc.tail(),
        );
      throw new ProcessFailedError(
        `${proc.name} did not become ready: ${(err as Error).message}`,
        proc.tail(),
      );
    });
  } finally {
    await dispatcher.close();
  }
}

/** Starts etcd, kube-apiserver and kube-controller-manager for `name` and waits until all are ready. */
export async function startControlPlane(
  name: string,
  opts: StartControlPlaneOptions = {},
): Promise<ControlPlane> {
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name)) {
    throw new TetherError('TETHER_INVALID_ARGUMENT', `control plane name "${name}" must be a DNS label`);
  }
  const signal = opts.signal;
  signal?.throwIfAborted();
  const binaries = opts.binaries ?? (await ensureBinaries(undefined, signal));
  const timeoutMs = opts.readyTimeoutMs ?? 120_000;
  let dir: string;
  if (opts.baseDir) {
    mkdirSync(opts.baseDir, { recursive: true });
    dir = mkdtempSync(join(opts.baseDir, `${name}-`));
  } else {
    dir = mkdtempSync(join(tmpdir(), `tether-${name}-`));
  }
  const processes: SupervisedProcess[] = [];
  const failureHandlers: Array<(d: string) => void> = [];
  let stopped = false;

  const stop = async (): Promise<void> => {
    stopped = true;
    // Reverse start order: KCM, apiserver, then etcd.
    for (const p of [...processes].reverse()) await p.stop();
    if (!opts.keepDir) rmSync(dir, { recursive: true, force: true });
  };
  const supervise = (p: SupervisedProcess): SupervisedProcess => {
    processes.push(p);
    p.onUnexpectedExit((desc) => {
      if (stopped) return;
      const detail = `${name}: ${desc}; last log lines:\n${p.tail(10)}`;
      for (const h of failureHandlers) h(detail);
    });
    return p;
  };

  try {
    const nodeHost = opts.nodeNetwork?.hostAddress;
    const pki = await writePki(dir, name, nodeHost, opts.extraIpSans);
    const f = (file: string): string => pkiFile(pki, file);
    const [etcdPort, etcdPeerPort, apiPort, kcmPort] = await Promise.all([
      freePort(),
      freePort(),
      freePort(),
      freePort(),
    ]);
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const etcd = supervise(
      new SupervisedProcess({
        name: `${name}/etcd`,
        command: binaries.etcd,
        logFile: join(dir, 'etcd.log'),
        args: [
          `--name=${name}`,
          `--data-dir=${join(dir, 'etcd')}`,
          `--listen-client-urls=${etcdUrl}`,
          `--advertise-client-urls=${etcdUrl}`,
          `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
          `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
          `--initial-cluster=${name}=http://127.0.0.1:${etcdPeerPort}`,
          '--unsafe-no-fsync',
          '--quota-backend-bytes=2147483648',
          '--log-level=warn',
        ],
      }),
    );
    // a restarted process serves again on the same URL with the same files (etcd keeps its data dir)
    etcd.readiness = () => waitHealthy(etcd, `${etcdUrl}/health`, undefined, timeoutMs);
    await waitHealthy(etcd, `${etcdUrl}/health`, undefined, timeoutMs, signal);

    const apiserverUrl = `https://127.0.0.1:${apiPort}`;
    const apiserver = supervise(
      new SupervisedProcess({
        name: `${name}/kube-apiserver`,
        command: binaries.kubeApiserver,
        logFile: join(dir, 'kube-apiserver.log'),
        args: [
          `--etcd-servers=${etcdUrl}`,
          `--etcd-prefix=/registry`,
          `--bind-address=${nodeHost ? '0.0.0.0' : '127.0.0.1'}`,
          `--advertise-address=${nodeHost ?? '127.0.0.1'}`,
          `--secure-port=${apiPort}`,
          `--cert-dir=${join(dir, 'apiserver-certs')}`,
          `--tls-cert-file=${f('apiserver.crt')}`,
          `--tls-private-key-file=${f('apiserver.key')}`,
          `--client-ca-file=${f('ca.crt')}`,
          ...(nodeHost
            ? [
                '--authorization-mode=Node,RBAC',
                '--enable-admission-plugins=NodeRestriction',
                `--kubelet-client-certificate=${f('apiserver-kubelet-client.crt')}`,
                `--kubelet-client-key=${f('apiserver-kubelet-client.key')}`,
                '--kubelet-preferred-address-types=InternalIP',
                // aggregated APIs served by pods: dial the endpoint (pod IP, routed to the node)
                // instead of the ClusterIP, which only exists inside the node namespace
                '--enable-aggregator-routing=true',
              ]
            : ['--authorization-mode=RBAC']),
          // Kubernetes bootstrap tokens (`tether init --use-bootstrap-token`), as kubeadm hubs have
          '--enable-bootstrap-token-auth=true',
          `--service-account-key-file=${f('sa.pub')}`,
          `--service-account-signing-key-file=${f('sa.key')}`,
          '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
          `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
          `--endpoint-reconciler-type=${nodeHost ? 'lease' : 'none'}`,
          '--allow-privileged=true',
          `--requestheader-client-ca-file=${f('front-proxy-ca.crt')}`,
          `--requestheader-allowed-names=${FRONT_PROXY_CLIENT_NAME}`,
          '--requestheader-username-headers=X-Remote-User',
          '--requestheader-group-headers=X-Remote-Group',
          '--requestheader-extra-headers-prefix=X-Remote-Extra-',
          `--proxy-client-cert-file=${f('front-proxy-client.crt')}`,
          `--proxy-client-key-file=${f('front-proxy-client.key')}`,
          '--enable-priority-and-fairness=false',
          '--profiling=false',
          '--v=1',
        ],
      }),
    );
    const adminTls = {
      ca: pkiFileContent(f('ca.crt')),
      cert: pkiFileContent(f('admin.crt')),
      key: pkiFileContent(f('admin.key')),
    };
    apiserver.readiness = () => waitHealthy(apiserver, `${apiserverUrl}/readyz`, adminTls, timeoutMs);
    await waitHealthy(apiserver, `${apiserverUrl}/readyz`, adminTls, timeoutMs, signal);

    const kubeconfigPath = join(dir, 'admin.kubeconfig');
    writeKubeconfigFile(kubeconfigPath, {
      name,
      server: apiserverUrl,
      caPem: adminTls.ca,
      certPem: adminTls.cert,
      keyPem: adminTls.key,
    });
    signal?.throwIfAborted();
    if (opts.crds && opts.crds.length > 0) {
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfigPath);
      await installCrds(kc, opts.crds);
      if (opts.hubAdmission) {
        await installHubAdmission(kc);
        await installAddonConfigAdmission(kc);
      }
    }
    signal?.throwIfAborted();
    const kcmKubeconfig = join(dir, 'kcm.kubeconfig');
    writeKubeconfigFile(kcmKubeconfig, {
      name,
      server: apiserverUrl,
      caPem: adminTls.ca,
      certPem: pkiFileContent(f('kcm-client.crt')),
      keyPem: pkiFileContent(f('kcm-client.key')),
    });
    const startKcm = (kcmPort: number): SupervisedProcess =>
      supervise(
        new SupervisedProcess({
          name: `${name}/kube-controller-manager`,
          command: binaries.kubeControllerManager,
          logFile: join(dir, 'kube-controller-manager.log'),
          args: [
            `--kubeconfig=${kcmKubeconfig}`,
            `--authentication-kubeconfig=${kcmKubeconfig}`,
            `--authorization-kubeconfig=${kcmKubeconfig}`,
            '--bind-address=127.0.0.1',
            `--secure-port=${kcmPort}`,
            `--tls-cert-file=${f('kcm-serving.crt')}`,
            `--tls-private-key-file=${f('kcm-serving.key')}`,
            `--controllers=${nodeHost ? '*' : KCM_CONTROLLERS.join(',')}`,
            `--cluster-signing-cert-file=${f('ca.crt')}`,
            `--cluster-signing-key-file=${f('ca.key')}`,
            `--service-account-private-key-file=${f('sa.key')}`,
            `--root-ca-file=${f('ca.crt')}`,
            '--use-service-account-credentials=true',
            '--leader-elect=false',
            '--profiling=false',
            '--v=1',
          ],
        }),
      );
    // The secure port was free when picked, but a client's ephemeral source port can take it before
    // KCM binds (the window spans the CRD install): on that one failure, start again on a new port.
    for (let attempt = 1, port = kcmPort; ; attempt++, port = await freePort()) {
      const kcm = startKcm(port);
      const kcmHealthz = `https://127.0.0.1:${port}/healthz`;
      kcm.readiness = () => waitHealthy(kcm, kcmHealthz, { ca: adminTls.ca }, timeoutMs);
      try {
        await waitHealthy(kcm, kcmHealthz, { ca: adminTls.ca }, timeoutMs, signal);
        break;
      } catch (err) {
        const portTaken = err instanceof ProcessFailedError && /address already in use/.test(kcm.tail());
        if (!portTaken || attempt >= 3) throw err;
        processes.splice(processes.indexOf(kcm), 1);
        await kcm.stop();
      }
    }

    return {
      name,
      apiserverUrl,
      kubeconfigPath,
      caCertPath: f('ca.crt'),
      caKeyPath: f('ca.key'),
      frontProxyCaCertPath: f('front-proxy-ca.crt'),
      dir,
      stop,
      onFailure: (h) => failureHandlers.push(h),
      get pids() {
        return processes.filter((p) => p.running && p.pid !== undefined).map((p) => p.pid as number);
      },
      processes,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

function pkiFileContent(path: string): string {
  return readFileSync(path, 'utf8');
}
