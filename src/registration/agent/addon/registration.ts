// The managed end of addon registration (OCM's spoke addon registration and secret controllers),
// run inside the registration agent with the cluster's own hub credential:
//   - watches the ManagedClusterAddOns in the cluster's namespace on the hub (nothing else there);
//   - for each entry of status.registrations: a key and a CSR for the registration's subject
//     (csr.ts), and once the hub issued the certificate, the secret the addon agent reads
//     (hub-kubeconfig.ts) in the install namespace (status.namespace, spec.installNamespace, else
//     open-cluster-management-agent-addon); ClusterCertificateRotated on the addon, as OCM reports it;
//   - renews when 20–25 % (jittered) of the certificate's lifetime is left, the policy of the
//     cluster's own certificate (registration/agent/rotation.ts): the old secret serves until the
//     new certificate is written over it;
//   - deletes the secret when the addon or its registration goes away, never while the
//     ManagedClusterAddOn is being deleted (the agent may still need it to clean up).
// The install namespace: the default one is created when missing, as the klusterlet creates it at
// install; any other is the addon's (its ManifestWork creates it), so the secret waits for it.
// Hosted add-ons (OCM's hosting-cluster-name annotation) keep their Secrets on the hosting cluster,
// with `<addon>-managed-kubeconfig` beside them (hosted-addon.ts); what cannot be placed is reported
// on the add-on. Each Secret carries the agent's namespace: a cluster joined to two hubs runs two
// agents, and each cleans up only its own.
// A new hub credential (rotation, re-bootstrap) restarts the watches with it; CSRs in flight are
// kept, their keys are in memory only.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  addonManagedKubeconfigSecretName,
  addonNameLabel,
  type ManagedClusterAddOn,
  managedClusterAddOnResource,
  type RegistrationConfig,
} from '../../../api/addon.ts';
import {
  addonInstallNamespace,
  registrationSecretName,
  registrationSubject,
} from '../../../api/addon-registration.ts';
import {
  clusterNameLabel,
  addonAgentNamespace as defaultAddonInstallNamespace,
} from '../../../api/cluster.ts';
import { errorMessage } from '../../../errors.ts';
import {
  type Condition,
  type Controller,
  Informer,
  isAlreadyExists,
  isConflict,
  type KubeObject,
  type ReconcileResult,
  ResourceClient,
  runController,
  setCondition,
} from '../../../kube/index.ts';
import { type Logger, logger } from '../../../log.ts';
import { writeAddonStatus } from '../../addon-status-write.ts';
import type { HubEndpoint } from '../bootstrap-kubeconfig.ts';
import { ClusterCertificateRotatedCondition, certificateRotatedCondition } from '../certificate-reporting.ts';
import { fieldManager } from '../hub-kubeconfig-secret.ts';
import {
  type CertificateSigningRequest,
  certificateSigningRequestResource,
  namespaceResource,
  type Secret,
  secretResource,
} from '../kinds.ts';
import { jitteredRotationFraction, maxTimerMs, rotationTime } from '../rotation.ts';
import { addonCsrOutcome, createAddonCsr } from './csr.ts';
import { addonSecretPlace, managedKubeconfigSecret } from './hosted-addon.ts';
import {
  type AddonCredentialTarget,
  addonSecretData,
  registrationOwnerLabel,
  registrationSecretLabel,
  storedAddonCredential,
} from './hub-kubeconfig.ts';
import {
  checkRegistrations,
  invalidRegistrationCondition,
  invalidRegistrationReason,
} from './registration-check.ts';

export interface AddonRegistrationAgentOptions {
  clusterName: string;
  /** the registration agent's name: agent-name in every secret, and the default user's agent part */
  agentName: string;
  /** cluster-admin-like credential of the managed cluster (secrets, the install namespace) */
  managedKubeConfig: KubeConfig;
  /** the agent's namespace: its Secrets carry it, so another hub's agent on the cluster leaves them alone */
  agentNamespace: string;
  /** hosted mode: where hosted add-ons' Secrets go (the agent's own namespace on the hosting cluster) */
  hosting?: HostedAddonTarget;
  /** CSR spec.expirationSeconds (≥ 600); default: the signer's own */
  csrExpirationSeconds?: number;
  /** renew when this fraction of the lifetime is left; default 0.20–0.25 jittered */
  rotationFraction?: number;
  /** informer resync (default 10 min, OCM's) */
  resyncPeriodMs?: number;
  log?: Logger;
}

export interface HostedAddonTarget {
  kubeConfig: KubeConfig;
  namespace: string;
  /** the managed cluster's kubeconfig, self-contained, for `<addon>-managed-kubeconfig` */
  managedKubeconfig: string;
}

export interface AddonRegistrationAgent {
  /** use this hub credential (and hub endpoint for the addons' kubeconfigs) from now on */
  setHubCredentials(hubKubeConfig: KubeConfig, hub: HubEndpoint): void;
  stop(): Promise<void>;
}

/** A CSR this agent created and waits for, with the key that goes with it. */
interface PendingCsr {
  csrName: string;
  keyPem: string;
  /** the registration target it was made for (JSON): a changed registration starts over */
  targetKey: string;
}

interface Session {
  hubKubeConfig: KubeConfig;
  hub: HubEndpoint;
  addons: Informer<ManagedClusterAddOn>;
  addonClient: ResourceClient<ManagedClusterAddOn>;
  csrs: Informer<CertificateSigningRequest>;
  csrClient: ResourceClient<CertificateSigningRequest>;
  controller: Controller;
}

const secretSelector = (owner: string, cluster: string, addon?: string) =>
  `${registrationSecretLabel}=true,${registrationOwnerLabel}=${owner},${clusterNameLabel}=${cluster}` +
  (addon ? `,${addonNameLabel}=${addon}` : `,${addonNameLabel}`);

/** Start the agent; it does nothing until setHubCredentials gives it a hub credential. */
export function startAddonRegistrationAgent(options: AddonRegistrationAgentOptions): AddonRegistrationAgent {
  const { clusterName, agentName, managedKubeConfig } = options;
  const log = options.log ?? logger('addon-registration-agent', { cluster: clusterName });
  const fraction = options.rotationFraction ?? jitteredRotationFraction();
  const secrets = new ResourceClient<Secret>(managedKubeConfig, secretResource);
  const hosting = options.hosting;
  const hostingSecrets = hosting ? new ResourceClient<Secret>(hosting.kubeConfig, secretResource) : undefined;
  const namespaces = new ResourceClient(managedKubeConfig, namespaceResource);
  const pending = new Map<string, PendingCsr>();
  let session: Session | undefined;
  let stopped = false;

  /** Which cluster keeps `mca`'s Secrets, with the client for it; or why neither can. */
  const placeOf = (
    mca: ManagedClusterAddOn,
  ): { client: ResourceClient<Secret>; where: 'managed' | 'hosting' } | { problem: string } => {
    const place = addonSecretPlace(mca, clusterName, hosting?.namespace);
    if ('problem' in place) return place;
    return place.where === 'hosting' && hostingSecrets
      ? { client: hostingSecrets, where: 'hosting' }
      : { client: secrets, where: 'managed' };
  };

  const targetOf = (mca: ManagedClusterAddOn, registration: RegistrationConfig, hub: HubEndpoint) => {
    const addon = mca.metadata.name ?? '';
    const target: AddonCredentialTarget = {
      cluster: clusterName,
      addon,
      agentName,
      signerName: registration.signerName,
      subject: registrationSubject(registration, clusterName, addon, agentName),
      hub,
    };
    return {
      target,
      namespace: addonInstallNamespace(mca),
      secretName: registrationSecretName(addon, registration.signerName),
    };
  };

  /** This agent's add-on Secrets (of `addon`, or all), on the managed cluster and, hosted, on the hosting one. */
  const ownedSecrets = async (
    addon?: string,
  ): Promise<Array<{ where: 'managed' | 'hosting'; client: ResourceClient<Secret>; secret: Secret }>> => {
    const labelSelector = secretSelector(options.agentNamespace, clusterName, addon);
    const managed = (await secrets.list({ labelSelector })).items.map((secret) => ({
      where: 'managed' as const,
      client: secrets,
      secret,
    }));
    if (!hosting || !hostingSecrets) return managed;
    const hosted = (await hostingSecrets.list({ labelSelector, namespace: hosting.namespace })).items;
    return [
      ...managed,
      ...hosted.map((secret) => ({ where: 'hosting' as const, client: hostingSecrets, secret })),
    ];
  };

  /** Delete this addon's secrets other than `keep` ("managed|hosting:namespace/name"), on both clusters. */
  const deleteSecrets = async (addon: string, keep: ReadonlySet<string>) => {
    for (const { where, client, secret } of await ownedSecrets(addon)) {
      const key = `${where}:${secret.metadata?.namespace}/${secret.metadata?.name}`;
      if (keep.has(key)) continue;
      await client.delete(secret.metadata?.name ?? '', secret.metadata?.namespace, { ignoreNotFound: true });
      log.info({ addon, secret: key }, 'addon Secret deleted: its registration or hosted mode is gone');
    }
  };

  /** A hosted add-on's `<addon>-managed-kubeconfig` next to its hub credential (written when it differs). */
  const ensureManagedKubeconfig = async (addon: string, namespace: string) => {
    if (!hosting || !hostingSecrets) return;
    const want = managedKubeconfigSecret(addon, namespace, hosting.managedKubeconfig, secretLabels(addon));
    const existing = await hostingSecrets.get(want.metadata?.name ?? '', namespace);
    if (existing?.data?.['kubeconfig'] === want.data?.['kubeconfig']) return;
    await hostingSecrets.apply(want, { fieldManager, force: true });
    log.info(
      { addon, secret: `${namespace}/${want.metadata?.name}` },
      'hosted add-on managed kubeconfig written',
    );
  };

  const secretLabels = (addon: string) => ({
    [registrationSecretLabel]: 'true',
    [registrationOwnerLabel]: options.agentNamespace,
    [clusterNameLabel]: clusterName,
    [addonNameLabel]: addon,
  });

  const ensureNamespace = async (namespace: string) => {
    if (await namespaces.get(namespace)) return;
    if (namespace !== defaultAddonInstallNamespace) {
      throw new Error(
        `install namespace ${namespace} does not exist yet (the addon's ManifestWork creates it)`,
      );
    }
    await namespaces.create({ metadata: { name: namespace } }).catch((err: unknown) => {
      if (!isAlreadyExists(err)) throw err;
    });
  };

  /**
   * Writes the add-on's conditions as `change` makes them (not on an add-on being deleted);
   * resolves whether it wrote. A conflict is left to the next look: others kept writing.
   */
  const writeConditions = (
    s: Session,
    mca: ManagedClusterAddOn,
    change: (conditions: Condition[] | undefined) => Condition[],
  ): Promise<boolean> =>
    writeAddonStatus(s.addonClient, mca, (current) =>
      current.metadata.deletionTimestamp
        ? undefined
        : { ...current.status, conditions: change(current.status?.conditions) },
    ).catch((err: unknown) => {
      if (!isConflict(err)) throw err;
      return false;
    });

  const reportRotated = async (s: Session, addon: string, notBefore: Date, notAfter: Date) => {
    const mca = await s.addonClient.get(addon, clusterName);
    if (!mca) return;
    const rotated = certificateRotatedCondition(notBefore, notAfter);
    await writeConditions(s, mca, (conditions) => setCondition(conditions, rotated));
  };

  const isInvalidReport = (c: { type: string; reason?: string }) =>
    c.type === ClusterCertificateRotatedCondition && c.reason === invalidRegistrationReason;

  /** Says on the add-on which registrations get no credential and why (once per change). */
  const reportInvalid = async (s: Session, mca: ManagedClusterAddOn, problems: string[]) => {
    const condition = invalidRegistrationCondition(problems);
    if (await writeConditions(s, mca, (conditions) => setCondition(conditions, condition)))
      log.warn({ addon: mca.metadata.name, problems }, 'addon registrations the agent cannot act on');
  };

  /** The registrations are usable again: the InvalidRegistration report goes (a rotation reports True). */
  const clearInvalid = async (s: Session, mca: ManagedClusterAddOn) => {
    await writeConditions(s, mca, (conditions) => (conditions ?? []).filter((c) => !isInvalidReport(c)));
  };

  /** One registration: ms until it needs a look again (rotation), or undefined (a CSR event wakes it). */
  const syncRegistration = async (
    s: Session,
    mca: ManagedClusterAddOn,
    registration: RegistrationConfig,
    place: { client: ResourceClient<Secret>; where: 'managed' | 'hosting' },
  ): Promise<number | undefined> => {
    const secrets = place.client;
    const { target, namespace, secretName } = targetOf(mca, registration, s.hub);
    const addon = target.addon;
    const pendingKey = `${addon}/${registration.signerName}`;
    const targetKey = JSON.stringify({ ...target, namespace });
    const stored = storedAddonCredential(await secrets.get(secretName, namespace), target);
    if (!('problem' in stored)) {
      const due = rotationTime(stored.notBefore, stored.notAfter, fraction).getTime() - Date.now();
      if (due > 0) {
        pending.delete(pendingKey);
        return Math.min(due, maxTimerMs);
      }
    }
    const waiting = pending.get(pendingKey);
    if (waiting && waiting.targetKey === targetKey) {
      const csr = s.csrs.getByName(waiting.csrName);
      const outcome = csr ? addonCsrOutcome(csr) : { refused: 'it was deleted before it was issued' };
      if (!outcome) return undefined;
      if ('refused' in outcome) {
        pending.delete(pendingKey);
        throw new Error(`CSR ${waiting.csrName} of addon ${addon}: ${outcome.refused}`);
      }
      // a hosted add-on's namespace is the hosted agent's own: it is there
      if (place.where === 'managed') await ensureNamespace(namespace);
      await secrets.apply(
        {
          metadata: { name: secretName, namespace, labels: secretLabels(addon) },
          type: 'Opaque',
          data: addonSecretData(target, outcome.certPem, waiting.keyPem),
        },
        { fieldManager, force: true },
      );
      pending.delete(pendingKey);
      const written = storedAddonCredential(await secrets.get(secretName, namespace), target);
      if ('problem' in written)
        throw new Error(`the certificate issued for addon ${addon} is unusable: ${written.problem}`);
      log.info(
        { addon, secret: `${namespace}/${secretName}`, csr: waiting.csrName, notAfter: written.notAfter },
        'addon hub credential written',
      );
      await reportRotated(s, addon, written.notBefore, written.notAfter).catch((err: unknown) =>
        log.warn({ addon, err: errorMessage(err) }, 'cannot report ClusterCertificateRotated'),
      );
      const due = rotationTime(written.notBefore, written.notAfter, fraction).getTime() - Date.now();
      return Math.min(Math.max(due, 1000), maxTimerMs);
    }
    const created = await createAddonCsr(s.csrClient, {
      cluster: clusterName,
      addon,
      signerName: registration.signerName,
      subject: target.subject,
      expirationSeconds: options.csrExpirationSeconds,
    });
    pending.set(pendingKey, { ...created, targetKey });
    log.info(
      {
        addon,
        csr: created.csrName,
        signer: registration.signerName,
        reason: 'problem' in stored ? stored.problem : 'rotation due',
      },
      'addon CSR created: waiting for the hub to issue it',
    );
    return undefined;
  };

  /** Reconcile `addon` in session `s`; a replaced session does nothing more. */
  const reconcile = async (s: Session, addon: string): Promise<ReconcileResult | undefined> => {
    if (s !== session || stopped || !addon) return undefined;
    const mca = s.addons.getByName(addon, clusterName);
    if (mca?.metadata.deletionTimestamp) return undefined;
    // Unusable entries are reported on the add-on, not retried: a new status wakes this again.
    const checked = checkRegistrations(mca?.status?.registrations);
    const place = mca ? placeOf(mca) : undefined;
    const placed = place && !('problem' in place) ? place : undefined;
    const problems = place && 'problem' in place ? [...checked.problems, place.problem] : checked.problems;
    const registrations = placed ? checked.registrations : [];
    if (mca && problems.length > 0) await reportInvalid(s, mca, problems);
    else if (mca?.status?.conditions?.some(isInvalidReport)) await clearInvalid(s, mca);
    const where = placed?.where ?? 'managed';
    const keep = new Set(
      registrations.map((r) => {
        const t = targetOf(mca!, r, s.hub);
        return `${where}:${t.namespace}/${t.secretName}`;
      }),
    );
    if (mca && where === 'hosting') {
      const namespace = addonInstallNamespace(mca);
      keep.add(`hosting:${namespace}/${addonManagedKubeconfigSecretName(addon)}`);
      await ensureManagedKubeconfig(addon, namespace);
    }
    await deleteSecrets(addon, keep);
    for (const key of [...pending.keys()]) {
      const signer = key.slice(addon.length + 1);
      if (key.startsWith(`${addon}/`) && !registrations.some((r) => r.signerName === signer))
        pending.delete(key);
    }
    let next: number | undefined;
    const failures: string[] = [];
    for (const registration of registrations) {
      try {
        // a registration implies a place (none is kept without one)
        const due = await syncRegistration(s, mca!, registration, placed!);
        if (due !== undefined) next = Math.min(next ?? due, due);
      } catch (err) {
        failures.push(errorMessage(err));
      }
    }
    if (failures.length > 0) throw new Error(failures.join('; ')); // retried with backoff
    return next === undefined ? undefined : { requeueAfterMs: next };
  };

  const startSession = (hubKubeConfig: KubeConfig, hub: HubEndpoint): Session => {
    const addonClient = new ResourceClient<ManagedClusterAddOn>(hubKubeConfig, managedClusterAddOnResource);
    const csrClient = new ResourceClient<CertificateSigningRequest>(
      hubKubeConfig,
      certificateSigningRequestResource,
    );
    const resyncPeriodMs = options.resyncPeriodMs ?? 600_000;
    const addons = new Informer<ManagedClusterAddOn>(addonClient, {
      namespace: clusterName,
      resyncPeriodMs,
      name: `managedclusteraddons of ${clusterName}`,
      log,
    });
    const csrs = new Informer<CertificateSigningRequest>(csrClient, {
      labelSelector: `${clusterNameLabel}=${clusterName},${addonNameLabel}`,
      resyncPeriodMs: 0,
      name: `addon csrs of ${clusterName}`,
      log,
    });
    const self = {} as Session;
    const controller = runController({
      name: 'addon-registration-agent',
      informers: [addons as Informer<KubeObject>, csrs as Informer<KubeObject>],
      keyFunc: (obj, informer) =>
        informer === (addons as Informer<KubeObject>)
          ? obj.metadata?.name
          : obj.metadata?.labels?.[addonNameLabel],
      reconcile: (addon) => reconcile(self, addon),
      workers: 2,
      log,
    });
    // Secrets of addons that went away while the agent was not running.
    void controller.ready.then(async (ready) => {
      if (!ready) return;
      try {
        for (const { secret } of await ownedSecrets())
          controller.queue.add(secret.metadata?.labels?.[addonNameLabel] ?? '');
      } catch (err) {
        log.warn({ err: errorMessage(err) }, 'cannot list the addon hub credentials to clean up');
      }
    });
    return Object.assign(self, { hubKubeConfig, hub, addons, addonClient, csrs, csrClient, controller });
  };

  return {
    setHubCredentials(hubKubeConfig, hub) {
      if (stopped) return;
      const previous = session;
      session = startSession(hubKubeConfig, hub);
      void previous?.controller.stop();
      log.info({ hub: hub.server }, 'addon registration uses the new hub credential');
    },
    async stop() {
      stopped = true;
      await session?.controller.stop();
      session = undefined;
    },
  };
}
