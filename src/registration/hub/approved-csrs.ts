// ApprovedClusterCsrs: which clusters have an approved CSR in the approver's CSR cache, kept from
// the informer's events, so the approver can tell in O(1) that a cluster has joined (a certificate
// was issued for it) without listing its CSRs. Owns the index only; deciding stays in
// registration/csr-approval.ts and registration/csr-policy.ts.
import { clusterNameLabel } from '../../api/index.ts';
import type { Informer } from '../../kube/index.ts';
import { isCsrApproved } from './csr-policy.ts';
import type { CertificateSigningRequest } from './resources.ts';

export class ApprovedClusterCsrs {
  /** cluster name → names of its approved CSRs in the cache */
  private readonly byCluster = new Map<string, Set<string>>();

  constructor(informer: Informer<CertificateSigningRequest>) {
    informer.addHandlers({
      add: (csr) => this.observe(csr),
      update: (old, csr) => {
        this.forget(old);
        this.observe(csr);
      },
      delete: (csr) => this.forget(csr),
    });
  }

  /** Whether a CSR of `cluster` other than `exceptCsr` is approved in the cache. */
  hasApproved(cluster: string, exceptCsr: string): boolean {
    const names = this.byCluster.get(cluster);
    if (!names) return false;
    return names.size > 1 || (names.size === 1 && !names.has(exceptCsr));
  }

  private observe(csr: CertificateSigningRequest): void {
    if (isCsrApproved(csr)) {
      const { cluster, name } = keyOf(csr);
      if (!cluster || !name) return;
      const names = this.byCluster.get(cluster) ?? new Set<string>();
      names.add(name);
      this.byCluster.set(cluster, names);
    } else {
      this.forget(csr);
    }
  }

  private forget(csr: CertificateSigningRequest): void {
    const { cluster, name } = keyOf(csr);
    if (!cluster || !name) return;
    const names = this.byCluster.get(cluster);
    names?.delete(name);
    if (names?.size === 0) this.byCluster.delete(cluster);
  }
}

function keyOf(csr: CertificateSigningRequest) {
  return { cluster: csr.metadata?.labels?.[clusterNameLabel], name: csr.metadata?.name };
}
