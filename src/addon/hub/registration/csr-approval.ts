// AddonCsrReconciler: for one addon, approves the CSRs of its agents that registration/csr-policy.ts allows and
// the addon's own `registration.approve` accepts (Approved, reason
// AutoApprovedByHubCSRApprovingController as OCM's addon manager writes it), and for a custom
// signer issues the certificate of an approved CSR with the addon's `registration.sign` (OCM's
// csrsign controller): status.certificate, or a Failed condition when signing throws. A CSR the
// policy refuses is left alone (logged), never denied. Only CSRs labelled with the addon's name are
// watched; the kube-apiserver-client certificates themselves are issued by the hub's signer.
import '../../../pki/index.ts'; // sets @peculiar/x509's crypto provider, used by csr-policy.ts
import type { KubeConfig } from '@kubernetes/client-node';
import {
  addonNameLabel,
  kubeApiserverClientSignerName,
  type ManagedClusterAddOn,
} from '../../../api/addon.ts';
import { clusterNameLabel, type ManagedCluster } from '../../../api/cluster.ts';
import { errorMessage } from '../../../errors.ts';
import { formatTime, type Informer, type ResourceClient } from '../../../kube/index.ts';
import type { Logger } from '../../../log.ts';
import { approveCsr } from '../../../registration/hub/csr-approval.ts';
import { isCsrApproved, isCsrDecided } from '../../../registration/hub/csr-policy.ts';
import type { CertificateSigningRequest, CsrCondition } from '../../../registration/hub/resources.ts';
import type { AgentAddon } from '../../sdk/types.ts';
import { desiredRegistrations } from './configs.ts';
import { addonRequestVerifies, checkAddonCsr, checkAddonCsrSubject } from './csr-policy.ts';

/** OCM's reason and message on the Approved condition of an addon CSR. */
export const addonCsrApproval = {
  reason: 'AutoApprovedByHubCSRApprovingController',
  message: 'Auto approving addon agent certificate.',
} as const;

export interface AddonCsrReconcilerOptions {
  hubKubeConfig: KubeConfig;
  addon: AgentAddon;
  csrs: ResourceClient<CertificateSigningRequest>;
  clusters: ResourceClient<ManagedCluster>;
  csrInformer: Informer<CertificateSigningRequest>;
  addonInformer: Informer<ManagedClusterAddOn>;
  log: Logger;
}

export class AddonCsrReconciler {
  private readonly options: AddonCsrReconcilerOptions;

  constructor(options: AddonCsrReconcilerOptions) {
    this.options = options;
  }

  /** CSR names to look at again when `mca` changed: the undecided or unsigned ones of its cluster. */
  csrsOfCluster(cluster: string): string[] {
    return this.options.csrInformer
      .list()
      .filter((c) => c.metadata?.labels?.[clusterNameLabel] === cluster)
      .filter((c) => !isCsrDecided(c) || (isCsrApproved(c) && !c.status?.certificate))
      .map((c) => c.metadata?.name ?? '');
  }

  async reconcile(name: string): Promise<void> {
    const csr = this.options.csrInformer.getByName(name);
    if (!csr || csr.metadata?.labels?.[addonNameLabel] !== this.options.addon.name) return;
    if (!isCsrDecided(csr)) await this.approve(name, csr);
    else if (needsCustomSigning(csr)) await this.sign(name);
  }

  private mcaOf(csr: CertificateSigningRequest): ManagedClusterAddOn | undefined {
    const cluster = csr.metadata?.labels?.[clusterNameLabel];
    return cluster ? this.options.addonInformer.getByName(this.options.addon.name, cluster) : undefined;
  }

  private async approve(name: string, csr: CertificateSigningRequest): Promise<void> {
    const { addon, log } = this.options;
    const mca = this.mcaOf(csr);
    const clusterName = csr.metadata?.labels?.[clusterNameLabel] ?? '';
    // Fresh: acceptance may have been revoked a moment ago.
    const cluster = clusterName ? await this.options.clusters.get(clusterName) : undefined;
    const registrations =
      mca && cluster && addon.registration ? desiredRegistrations(addon, cluster, mca).registrations : [];
    const check = checkAddonCsr(csr, addon.name, mca, cluster, registrations);
    if (!check.ok) {
      log.info({ csr: name, problem: check.problem }, 'addon CSR left alone');
      return;
    }
    if (!(await addonRequestVerifies(csr))) {
      log.info({ csr: name }, 'addon CSR left alone: its request signature does not verify');
      return;
    }
    if (addon.registration?.approve && !addon.registration.approve(cluster!, mca!, csr)) {
      log.info({ csr: name, cluster: check.cluster }, 'addon CSR left alone: the addon does not approve it');
      return;
    }
    if (await approveCsr(this.options.hubKubeConfig, name, addonCsrApproval, csr)) {
      log.info(
        { csr: name, cluster: check.cluster, user: check.subject.commonName, requester: csr.spec.username },
        'addon CSR approved',
      );
    }
  }

  private async sign(name: string): Promise<void> {
    const { addon, csrs, log } = this.options;
    const sign = addon.registration?.sign;
    if (!sign) return;
    const csr = await csrs.get(name);
    if (!csr || !needsCustomSigning(csr)) return;
    // Whoever approved it, only a request for a registration of this addon is signed.
    const mca = this.mcaOf(csr);
    const cluster = mca ? await this.options.clusters.get(mca.metadata.namespace ?? '') : undefined;
    const registrations = mca && cluster ? desiredRegistrations(addon, cluster, mca).registrations : [];
    const check = checkAddonCsrSubject(csr, addon.name, mca, registrations);
    if (!check.ok) {
      log.info({ csr: name, problem: check.problem }, 'approved addon CSR not signed');
      return;
    }
    let certPem: string;
    try {
      certPem = await sign(csr, mca);
      if (!certPem.includes('BEGIN CERTIFICATE')) throw new Error('the signer returned no PEM certificate');
    } catch (err) {
      const now = formatTime(new Date());
      const failed: CsrCondition = {
        type: 'Failed',
        status: 'True',
        reason: 'SignerValidationFailure',
        message: `the addon ${addon.name} could not sign it: ${errorMessage(err)}`,
        lastUpdateTime: now,
        lastTransitionTime: now,
      };
      await csrs.replaceStatus({
        ...csr,
        status: { ...csr.status, conditions: [...(csr.status?.conditions ?? []), failed] },
      });
      log.warn({ csr: name, err: errorMessage(err) }, 'approved addon CSR cannot be signed');
      return;
    }
    const certificate = Buffer.from(certPem, 'utf8').toString('base64');
    await csrs.replaceStatus({ ...csr, status: { ...csr.status, certificate } });
    log.info({ csr: name, cluster: check.cluster }, 'addon CSR signed');
  }
}

function needsCustomSigning(csr: CertificateSigningRequest): boolean {
  const failed = (csr.status?.conditions ?? []).some((c) => c.type === 'Failed' && c.status === 'True');
  return (
    csr.spec.signerName !== kubeApiserverClientSignerName &&
    isCsrApproved(csr) &&
    !failed &&
    !csr.status?.certificate
  );
}
