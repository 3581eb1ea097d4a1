// Template add-ons on the hub (OCM's addon-manager runs them the same way): every
// ClusterManagementAddOn whose spec.supportedConfigs list `addontemplates` is run as an add-on by
// its own AddonManager (src/addon/sdk/manager.ts: deploy by ManifestWork, registration, CSRs, with
// per-add-on leader election), whose agent comes from the AddOnTemplate the cluster's
// ManagedClusterAddOn references (agent.ts). An add-on starts when such a ClusterManagementAddOn
// appears and stops when it goes or no longer lists templates; its ManifestWorks go with its
// ManagedClusterAddOns as for any add-on. One informer of AddOnTemplates serves every add-on;
// a custom signer's CA is read from its Secret in the hub namespace when a CSR is signed.
import type { KubeConfig } from '@kubernetes/client-node';
import {
  addonApiGroup,
  type ClusterManagementAddOn,
  clusterManagementAddOnResource,
} from '../../../api/addon.ts';
import { type AddOnTemplate, addOnTemplateResource } from '../../../api/addon-template.ts';
import { errorMessage } from '../../../errors.ts';
import { Informer, type KubeObject, ResourceClient } from '../../../kube/index.ts';
import { secretResource } from '../../../kube/kinds.ts';
import { type Logger, logger } from '../../../log.ts';
import { loadCertificateAuthority, signCertificateRequest } from '../../../pki/index.ts';
import { AddonManager, type AddonManagerLeaderElection } from '../../sdk/manager.ts';
import { type TemplateSource, templateAddon } from './agent.ts';

/** How long an add-on's agent certificate from a template's custom signer is valid (OCM: 24 h). */
export const customSignerValiditySeconds = 24 * 3600;

export interface TemplateAddonsOptions {
  hubKubeConfig: KubeConfig;
  log?: Logger;
  resyncPeriodMs?: number;
  leaderElection?: AddonManagerLeaderElection | false;
}

export interface TemplateAddons {
  /** names of the template add-ons running now */
  running(): string[];
  stop(): Promise<void>;
}

/** True when the ClusterManagementAddOn is a template add-on (lists addontemplates). */
export function usesTemplates(cma: ClusterManagementAddOn): boolean {
  return (cma.spec?.supportedConfigs ?? []).some(
    (c) => c.group === addonApiGroup && c.resource === addOnTemplateResource.plural,
  );
}

interface SecretData extends KubeObject {
  data?: Record<string, string>;
}

export function startTemplateAddons(opts: TemplateAddonsOptions): TemplateAddons {
  const log = opts.log ?? logger('addon-template');
  const templates = new Informer<AddOnTemplate>(
    new ResourceClient(opts.hubKubeConfig, addOnTemplateResource),
    {
      ...(opts.resyncPeriodMs !== undefined ? { resyncPeriodMs: opts.resyncPeriodMs } : {}),
      log,
    },
  );
  const cmas = new Informer<ClusterManagementAddOn>(
    new ResourceClient(opts.hubKubeConfig, clusterManagementAddOnResource),
    { ...(opts.resyncPeriodMs !== undefined ? { resyncPeriodMs: opts.resyncPeriodMs } : {}), log },
  );
  const secrets = new ResourceClient<SecretData>(opts.hubKubeConfig, secretResource);
  const source: TemplateSource = {
    template: (name) => templates.getByName(name),
    clusterManagementAddOn: (name) => cmas.getByName(name),
    async sign(caSecret, requestPem) {
      const secret = await secrets.get(caSecret.name, caSecret.namespace);
      const cert = secret?.data?.['tls.crt'];
      const key = secret?.data?.['tls.key'];
      if (!cert || !key)
        throw new Error(
          `signing CA Secret ${caSecret.namespace}/${caSecret.name} has no tls.crt and tls.key`,
        );
      const ca = await loadCertificateAuthority(
        Buffer.from(cert, 'base64').toString(),
        Buffer.from(key, 'base64').toString(),
      );
      return signCertificateRequest(ca, requestPem, {
        usage: 'client',
        validitySeconds: customSignerValiditySeconds,
      });
    },
  };

  const managers = new Map<string, Promise<AddonManager | undefined>>();
  let stopped = false;
  // one change at a time, so that a start and a stop of the same add-on never overlap
  let chain: Promise<void> = Promise.resolve();
  const enqueue = (step: () => Promise<void>) => {
    chain = chain
      .then(step)
      .catch((err: unknown) => log.error({ err: errorMessage(err) }, 'template add-on'));
  };

  const startAddon = (name: string) =>
    enqueue(async () => {
      if (stopped || managers.has(name)) return;
      const cma = cmas.getByName(name);
      if (!cma || !usesTemplates(cma) || cma.metadata?.deletionTimestamp) return; // gone meanwhile
      const manager = new AddonManager({
        hubKubeConfig: opts.hubKubeConfig,
        // the ClusterManagementAddOn is the user's: never created again by the manager
        ensureClusterManagementAddOns: false,
        log: log.child({ addon: name }),
        ...(opts.resyncPeriodMs !== undefined ? { resyncPeriodMs: opts.resyncPeriodMs } : {}),
        ...(opts.leaderElection !== undefined ? { leaderElection: opts.leaderElection } : {}),
      }).add(templateAddon(name, source));
      managers.set(name, Promise.resolve(manager));
      await manager.start();
      log.info({ addon: name }, 'template add-on started');
    });
  const stopAddon = (name: string) =>
    enqueue(async () => {
      const manager = await managers.get(name);
      managers.delete(name);
      if (!manager) return;
      await manager.stop();
      log.info({ addon: name }, 'template add-on stopped');
    });

  const look = (cma: ClusterManagementAddOn) => {
    const name = cma.metadata?.name ?? '';
    if (usesTemplates(cma) && !cma.metadata?.deletionTimestamp) startAddon(name);
    else if (managers.has(name)) stopAddon(name);
  };
  cmas.addHandlers({
    add: look,
    update: (_old, cma) => look(cma),
    delete: (cma) => stopAddon(cma.metadata?.name ?? ''),
  });
  templates.start();
  cmas.start();

  return {
    running: () => [...managers.keys()],
    async stop() {
      stopped = true;
      await Promise.all([cmas.stop(), templates.stop()]);
      await chain;
      const all = [...managers.values()];
      managers.clear();
      await Promise.all(all.map(async (m) => (await m)?.stop()));
    },
  };
}
