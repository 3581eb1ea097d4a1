// The OCM registration agent (what klusterlet's registration-agent does), run on or for a managed
// cluster: bootstrap kubeconfig → ManagedCluster → CSR → hub-kubeconfig-secret → lease, status,
// claims and certificate rotation. Public surface: startRegistrationAgent and its handle. One loop
// per concern, each in its own file:
//   agent-name.ts       the agent name: generated once (OCM's 5 random characters), kept in the secret
//   hub-credentials.ts  bootstrap, CSR, secret reuse/recovery, rotation (the only hub-credential owner)
//   csr.ts              one CSR and its wait, never more than 10 of the cluster's pending
//   certificate-reporting.ts  ClusterCertificateRotated condition and certificate events on the hub
//   managed-cluster.ts  the ManagedCluster at first join, and recreated when deleted on the hub
//   hub-session.ts      per credential: ManagedCluster informer, status reconciler, lease updater
//   status.ts           Joined / Available conditions, version, capacity, clusterClaims
//   availability.ts     managed apiserver probe;  claims.ts  ClusterClaim CRD, informer, exposure
//   lease.ts            managed-cluster-lease renewals
//   ./addon             addon registration: per-addon CSRs and `<addon>-hub-kubeconfig` secrets
//                       (option addonRegistration), and Lease health of the cluster's addons
//                       (option addonLeaseHealth), both run with this agent's hub credential
// Every hub call goes through client-node with the bootstrap kubeconfig's proxy (or the proxy
// option, or HTTPS_PROXY/NO_PROXY). Never writes hub objects other than its ManagedCluster, its
// CSRs (and its addons' CSRs), its lease, events and its addons' ClusterCertificateRotated
// condition in its cluster namespace; never touches the hub's conditions.

import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeConfig } from '@kubernetes/client-node';
import { inProcessAddonsClaim, inProcessClaimValue } from '../../api/addon-in-process.ts';
import {
  agentNamespace as defaultAgentNamespace,
  defaultLeaseDurationSeconds,
  defaultMaxCustomClusterClaims,
} from '../../api/index.ts';
import { errorMessage, InvalidArgumentError, TimeoutError } from '../../errors.ts';
import { type Logger, logger } from '../../log.ts';
import { type AddonRegistrationAgent, startAddonRegistrationAgent } from './addon/index.ts';
import { type AddonLeaseHealth, startAddonLeaseHealth } from './addon/lease-health.ts';
import { isValidAgentName, resolveAgentName } from './agent-name.ts';
import { ManagedClusterProbe } from './availability.ts';
import { clusterClaimInformer, ensureClusterClaimCrd } from './claims.ts';
import { type CredentialSource, HubCredentialsReconciler } from './hub-credentials.ts';
import type { HubCredentials } from './hub-kubeconfig-secret.ts';
import { HubSession } from './hub-session.ts';
import { ManagedClusterRecreator, managedClusterClientConfigs } from './managed-cluster.ts';

export {
  agentNameAlphabet,
  generateAgentName,
  generatedAgentNameLength,
  resolveAgentName,
} from './agent-name.ts';
export {
  CertificateEventReason,
  CertificateRotationReason,
  ClusterCertificateRotatedCondition,
  hubEventReportingController,
} from './certificate-reporting.ts';
export { exposeClaims, reservedClusterClaimNames, spokeOnlyClaimLabel } from './claims.ts';
export { csrCreationHaltedMessage, maxPendingClusterCsrs } from './csr.ts';
export { hubKubeconfigNames } from './hub-kubeconfig-secret.ts';
export { formatQuantity, parseQuantity, sumResourceLists } from './quantity.ts';
export { jitteredRotationFraction, rotationTime } from './rotation.ts';

export interface RegistrationAgentOptions {
  /** name of this cluster on the hub (a DNS label) */
  clusterName: string;
  /**
   * this agent's name: the certificate CN is system:open-cluster-management:<cluster>:<agent>.
   * Default: the one kept in hub-kubeconfig-secret, else a new random one stored there (OCM's way).
   */
  agentName?: string;
  /** credential for this managed cluster's apiserver (claims, probes, add-on secrets) */
  managedKubeConfig: KubeConfig;
  /**
   * the cluster that keeps the agent's own Secrets (bootstrap-hub-kubeconfig, hub-kubeconfig-secret):
   * the hosting cluster in hosted mode (OCM's); default managedKubeConfig
   */
  agentKubeConfig?: KubeConfig;
  /** bootstrap kubeconfig file; without it Secret bootstrap-hub-kubeconfig in agentNamespace */
  bootstrapKubeconfigPath?: string;
  /** namespace on the managed cluster for the agent's secrets (default open-cluster-management-agent) */
  agentNamespace?: string;
  /** forward proxy for every hub call; overrides the bootstrap kubeconfig's proxy-url */
  proxyUrl?: string;
  /** spec.leaseDurationSeconds of a ManagedCluster this agent creates (default 60) */
  leaseDurationSeconds?: number;
  /** custom ClusterClaims exposed beyond the reserved ones (default 20) */
  maxCustomClusterClaims?: number;
  /**
   * built-in add-ons this process hosts (src/api/addon-in-process.ts): announced to the hub in the
   * reserved claim in-process-addons.tether.dev
   */
  inProcessAddons?: readonly string[];
  /** CSR spec.expirationSeconds (≥ 600, the signer's minimum); default: the signer's own */
  csrExpirationSeconds?: number;
  /** renew when this fraction of the certificate lifetime is left; default 0.20–0.25 jittered */
  rotationFraction?: number;
  /** how often status is re-probed and reconciled without events (default 60 s) */
  statusIntervalSeconds?: number;
  /** failed probes in a row, a second apart, before Available turns False (default 3) */
  unavailableAfterFailures?: number;
  /** how often the managed apiserver's /livez is checked between status reconciles (default 10 s) */
  healthCheckIntervalSeconds?: number;
  /**
   * addon registration (OCM's): per-addon CSRs and the `<addon>-hub-kubeconfig` secrets in the
   * addons' install namespaces; false turns it off. Default on, with the rotation policy below.
   */
  addonRegistration?: false | { csrExpirationSeconds?: number; rotationFraction?: number };
  /**
   * Available of the cluster's Lease-mode addons from their leases (OCM's); false turns it off.
   * Default on with OCM's periods: lease duration 60 s (grace 5 ×), every addon looked at each 30 s.
   */
  addonLeaseHealth?: false | { leaseDurationSeconds?: number; syncIntervalSeconds?: number };
  /** called with every new hub kubeconfig (first join, rotation, re-bootstrap) once it is stored */
  onHubKubeconfigChanged?: (kc: KubeConfig) => void;
  log?: Logger;
}

export interface RegistrationAgent {
  readonly clusterName: string;
  readonly agentName: string;
  /** the hub kubeconfig in use, undefined until the first certificate is issued (or reused) */
  hubKubeConfig(): KubeConfig | undefined;
  /** resolves with the hub kubeconfig once there is one; TimeoutError after timeoutMs */
  waitForHubKubeConfig(timeoutMs?: number): Promise<KubeConfig>;
  /** resolves once the hub ManagedCluster shows ManagedClusterJoined True; TimeoutError after timeoutMs */
  joined(timeoutMs?: number): Promise<void>;
  /** serial of the client certificate in use */
  certificateSerial(): string | undefined;
  /** stop every loop and watch; in-flight reconciles finish first. Idempotent. */
  stop(): Promise<void>;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function validate(opts: RegistrationAgentOptions): void {
  const fail = (problem: string) => {
    throw new InvalidArgumentError(`registration agent: ${problem}`);
  };
  if (!DNS_LABEL.test(opts.clusterName)) fail(`clusterName "${opts.clusterName}" must be a DNS label`);
  if (opts.agentName !== undefined && !isValidAgentName(opts.agentName)) {
    fail(`agentName "${opts.agentName}" must be 1–253 characters without ":"`);
  }
  const positive = (name: string, v: number | undefined, min: number) => {
    if (v !== undefined && !(Number.isFinite(v) && v >= min)) fail(`${name} must be a number ≥ ${min}`);
  };
  positive('leaseDurationSeconds', opts.leaseDurationSeconds, 1);
  positive('maxCustomClusterClaims', opts.maxCustomClusterClaims, 0);
  positive('csrExpirationSeconds', opts.csrExpirationSeconds, 600);
  if (opts.addonRegistration) {
    positive('addonRegistration.csrExpirationSeconds', opts.addonRegistration.csrExpirationSeconds, 600);
    const r = opts.addonRegistration.rotationFraction;
    if (r !== undefined && !(r > 0 && r < 1))
      fail('addonRegistration.rotationFraction must be between 0 and 1');
  }
  if (opts.addonLeaseHealth) {
    positive('addonLeaseHealth.leaseDurationSeconds', opts.addonLeaseHealth.leaseDurationSeconds, 1);
    positive('addonLeaseHealth.syncIntervalSeconds', opts.addonLeaseHealth.syncIntervalSeconds, 0.1);
  }
  positive('statusIntervalSeconds', opts.statusIntervalSeconds, 0.1);
  positive('unavailableAfterFailures', opts.unavailableAfterFailures, 1);
  positive('healthCheckIntervalSeconds', opts.healthCheckIntervalSeconds, 0.1);
  const f = opts.rotationFraction;
  if (f !== undefined && !(f > 0 && f < 1)) fail('rotationFraction must be between 0 and 1');
}

/**
 * Start the registration agent. Returns at once: joining waits for the hub (acceptance and CSR
 * approval may take a human), retrying with backoff and logging what it waits for.
 */
export async function startRegistrationAgent(opts: RegistrationAgentOptions): Promise<RegistrationAgent> {
  validate(opts);
  const { clusterName, managedKubeConfig } = opts;
  const agentKubeConfig = opts.agentKubeConfig ?? managedKubeConfig;
  const namespace = opts.agentNamespace ?? defaultAgentNamespace;
  const agentName =
    opts.agentName ??
    (await resolveAgentName({ agentKubeConfig, clusterName, agentNamespace: namespace, log: opts.log }));
  const log = opts.log ?? logger('registration-agent', { cluster: clusterName, agent: agentName });
  const statusIntervalMs = (opts.statusIntervalSeconds ?? 60) * 1000;
  const clientConfigs = managedClusterClientConfigs(managedKubeConfig);
  const stopping = new AbortController();

  const claimInformer = clusterClaimInformer(managedKubeConfig, log.child({ loop: 'claims' }));
  const claimsReady = (async () => {
    for (let attempt = 0; !stopping.signal.aborted; attempt++) {
      try {
        await ensureClusterClaimCrd(managedKubeConfig, { signal: stopping.signal });
        if (!stopping.signal.aborted) claimInformer.start();
        return;
      } catch (err) {
        if (stopping.signal.aborted) return;
        const delay = Math.min(1000 * 2 ** attempt, 60_000);
        log.warn({ err: errorMessage(err), retryInMs: delay }, 'cannot install the ClusterClaim CRD yet');
        await sleep(delay, undefined, { signal: stopping.signal }).catch(() => {});
      }
    }
  })();

  const probe = new ManagedClusterProbe(managedKubeConfig, {
    unavailableAfterFailures: opts.unavailableAfterFailures,
    minProbeIntervalMs: Math.min(statusIntervalMs / 2, 5000),
    log: log.child({ loop: 'availability' }),
  });

  let session: HubSession | undefined;
  let addonLeaseHealth: AddonLeaseHealth | undefined;
  let current: HubCredentials | undefined;
  const waiters = { hub: new Set<() => void>(), joined: new Set<() => void>() };
  let isJoined = false;
  const notify = (set: Set<() => void>) => {
    for (const wake of [...set]) wake();
  };

  const recreator = new ManagedClusterRecreator({
    clusterName,
    agentKubeConfig,
    managedKubeConfig,
    agentNamespace: namespace,
    bootstrapKubeconfigPath: opts.bootstrapKubeconfigPath,
    proxyUrl: opts.proxyUrl,
    leaseDurationSeconds: opts.leaseDurationSeconds ?? defaultLeaseDurationSeconds,
    hubKubeConfig: () => current?.kubeconfig,
    log: log.child({ loop: 'recreate' }),
  });
  recreator.start();

  const addonRegistration = opts.addonRegistration;
  const addons: AddonRegistrationAgent | undefined =
    addonRegistration === false
      ? undefined
      : startAddonRegistrationAgent({
          clusterName,
          agentName,
          managedKubeConfig,
          agentNamespace: namespace,
          // hosted mode: hosted add-ons' Secrets go to the agent's own namespace on the hosting cluster
          ...(opts.agentKubeConfig && opts.agentKubeConfig !== managedKubeConfig
            ? {
                hosting: {
                  kubeConfig: opts.agentKubeConfig,
                  namespace,
                  managedKubeconfig: managedKubeConfig.exportConfig(),
                },
              }
            : {}),
          csrExpirationSeconds: addonRegistration?.csrExpirationSeconds,
          rotationFraction: addonRegistration?.rotationFraction,
          log: log.child({ loop: 'addon-registration' }),
        });

  const credentials: HubCredentialsReconciler = new HubCredentialsReconciler({
    clusterName,
    agentName,
    agentNamespace: namespace,
    agentKubeConfig,
    managedKubeConfig,
    bootstrapKubeconfigPath: opts.bootstrapKubeconfigPath,
    proxyUrl: opts.proxyUrl,
    leaseDurationSeconds: opts.leaseDurationSeconds ?? defaultLeaseDurationSeconds,
    csrExpirationSeconds: opts.csrExpirationSeconds,
    rotationFraction: opts.rotationFraction,
    log: log.child({ loop: 'hub-credentials' }),
    async onChange(creds: HubCredentials, source: CredentialSource) {
      if (stopping.signal.aborted) return;
      const next = new HubSession({
        hubKubeConfig: creds.kubeconfig,
        clusterName,
        claimInformer,
        probe,
        clientConfigs,
        maxCustomClusterClaims: opts.maxCustomClusterClaims ?? defaultMaxCustomClusterClaims,
        agentClaims: opts.inProcessAddons?.length
          ? [{ name: inProcessAddonsClaim, value: inProcessClaimValue(opts.inProcessAddons) }]
          : [],
        statusIntervalMs,
        healthCheckIntervalMs: (opts.healthCheckIntervalSeconds ?? 10) * 1000,
        onUnauthorized: () => credentials.reportUnauthorized(),
        onClusterMissing: () => recreator.wake(),
        onAccepted: () => credentials.hubAccepted(),
        onJoined: () => {
          if (isJoined) return;
          isJoined = true;
          log.info('managed cluster joined the hub');
          notify(waiters.joined);
        },
        log,
      });
      next.start();
      const previous = session;
      session = next;
      current = creds;
      notify(waiters.hub);
      addons?.setHubCredentials(creds.kubeconfig, creds.hub);
      const previousLeaseHealth = addonLeaseHealth;
      const leaseHealth = opts.addonLeaseHealth;
      addonLeaseHealth =
        leaseHealth === false
          ? undefined
          : startAddonLeaseHealth({
              hubKubeConfig: creds.kubeconfig,
              managedKubeConfig,
              clusterName,
              leaseDurationSeconds: leaseHealth?.leaseDurationSeconds,
              syncIntervalMs:
                leaseHealth?.syncIntervalSeconds === undefined
                  ? undefined
                  : leaseHealth.syncIntervalSeconds * 1000,
              log: log.child({ loop: 'addon-lease-health' }),
            });
      await previousLeaseHealth?.stop();
      await previous?.stop();
      log.info({ source, serial: creds.serial }, 'hub clients switched to the new hub kubeconfig');
      try {
        opts.onHubKubeconfigChanged?.(creds.kubeconfig);
      } catch (err) {
        log.error({ err: errorMessage(err) }, 'onHubKubeconfigChanged threw');
      }
    },
  });
  credentials.start();

  const waitFor = async (set: Set<() => void>, done: () => boolean, what: string, timeoutMs: number) => {
    if (done()) return;
    let wake = () => {};
    const woken = new Promise<void>((resolve) => {
      wake = resolve;
    });
    set.add(wake);
    const timer = setTimeout(wake, timeoutMs);
    try {
      await woken;
    } finally {
      clearTimeout(timer);
      set.delete(wake);
    }
    if (!done())
      throw new TimeoutError(`${what} within ${timeoutMs} ms (see the agent log for what it waits for)`);
  };

  let stopped: Promise<void> | undefined;
  return {
    clusterName,
    agentName,
    hubKubeConfig: () => current?.kubeconfig,
    certificateSerial: () => current?.serial,
    async waitForHubKubeConfig(timeoutMs = 120_000) {
      await waitFor(waiters.hub, () => current !== undefined, 'no hub kubeconfig', timeoutMs);
      return current!.kubeconfig;
    },
    joined: (timeoutMs = 120_000) =>
      waitFor(waiters.joined, () => isJoined, `cluster ${clusterName} did not join the hub`, timeoutMs),
    stop() {
      stopped ??= (async () => {
        stopping.abort();
        notify(waiters.hub);
        notify(waiters.joined);
        await credentials.stop();
        await Promise.all([
          session?.stop(),
          addons?.stop(),
          addonLeaseHealth?.stop(),
          claimsReady,
          claimInformer.stop(),
          recreator.stop(),
        ]);
        log.info('registration agent stopped');
      })();
      return stopped;
    },
  };
}
