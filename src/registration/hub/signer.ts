// ClusterCsrSigningReconciler: the optional built-in signer, for hubs whose distribution does not
// sign `kubernetes.io/kube-apiserver-client` CSRs itself (or for a signer name of our own). It
// issues the certificate of every *approved* CSR of its signer name that has none yet, honouring
// spec.expirationSeconds within its limits; it approves nothing (registration/csr-approval.ts does). A request
// it cannot sign gets a Failed condition, like the kube-controller-manager's signers do.
import { errorMessage } from '../../errors.ts';
import { formatTime, type Informer, type ResourceClient } from '../../kube/index.ts';
import type { Logger } from '../../log.ts';
import { type CertificateAuthority, signCertificateRequest } from '../../pki/index.ts';
import { isCsrApproved } from './csr-policy.ts';
import type { CertificateSigningRequest, CsrCondition } from './resources.ts';

/** Usages a certificate from this signer can carry: client certificates only. */
const signableUsages: readonly string[] = ['client auth', 'digital signature', 'key encipherment'];

/** The apiserver's floor for spec.expirationSeconds (10 min). */
const minValiditySeconds = 600;

export interface HubSignerLimits {
  /** validity when the CSR does not ask (default 1 year) */
  defaultValiditySeconds: number;
  /** the most any CSR gets (default 1 year) */
  maxValiditySeconds: number;
}

/**
 * How long a certificate for `csr` lives: what it asks for (default otherwise), no less than
 * 10 min, no more than maxValiditySeconds nor beyond the CA's own expiry.
 */
export function certificateValiditySeconds(
  csr: CertificateSigningRequest,
  limits: HubSignerLimits,
  caNotAfter: Date,
  now: Date = new Date(),
): number {
  const asked = csr.spec.expirationSeconds ?? limits.defaultValiditySeconds;
  const caLeft = Math.floor((caNotAfter.getTime() - now.getTime()) / 1000);
  return Math.max(minValiditySeconds, Math.min(asked, limits.maxValiditySeconds, caLeft));
}

export class ClusterCsrSigningReconciler {
  private readonly csrs: ResourceClient<CertificateSigningRequest>;
  private readonly informer: Informer<CertificateSigningRequest>;
  private readonly ca: CertificateAuthority;
  private readonly limits: HubSignerLimits;
  private readonly log: Logger;

  constructor(
    csrs: ResourceClient<CertificateSigningRequest>,
    informer: Informer<CertificateSigningRequest>,
    ca: CertificateAuthority,
    limits: HubSignerLimits,
    log: Logger,
  ) {
    this.csrs = csrs;
    this.informer = informer;
    this.ca = ca;
    this.limits = limits;
    this.log = log;
  }

  async reconcile(name: string): Promise<void> {
    const cached = this.informer.getByName(name);
    if (!cached || !needsSigning(cached)) return;
    const csr = await this.csrs.get(name);
    if (!csr || !needsSigning(csr)) return;
    const foreign = (csr.spec.usages ?? []).filter((u) => !signableUsages.includes(u));
    if (foreign.length > 0) {
      await this.fail(csr, `usages ${foreign.join(', ')} are not allowed for client certificates`);
      return;
    }
    const validitySeconds = certificateValiditySeconds(csr, this.limits, this.ca.cert.notAfter);
    let certPem: string;
    try {
      const requestPem = Buffer.from(csr.spec.request, 'base64').toString('utf8');
      certPem = await signCertificateRequest(this.ca, requestPem, { usage: 'client', validitySeconds });
    } catch (err) {
      await this.fail(csr, `cannot sign the request: ${errorMessage(err)}`);
      return;
    }
    const certificate = Buffer.from(certPem, 'utf8').toString('base64');
    await this.csrs.replaceStatus({ ...csr, status: { ...csr.status, certificate } });
    this.log.info({ csr: name, validitySeconds }, 'signed an approved CSR');
  }

  private async fail(csr: CertificateSigningRequest, message: string): Promise<void> {
    const now = formatTime(new Date());
    const failed: CsrCondition = {
      type: 'Failed',
      status: 'True',
      reason: 'SignerValidationFailure',
      message,
      lastUpdateTime: now,
      lastTransitionTime: now,
    };
    const conditions = [...(csr.status?.conditions ?? []), failed];
    await this.csrs.replaceStatus({ ...csr, status: { ...csr.status, conditions } });
    this.log.warn({ csr: csr.metadata?.name, problem: message }, 'approved CSR cannot be signed');
  }
}

function needsSigning(csr: CertificateSigningRequest): boolean {
  const failed = (csr.status?.conditions ?? []).some((c) => c.type === 'Failed' && c.status === 'True');
  return isCsrApproved(csr) && !failed && !csr.status?.certificate;
}
