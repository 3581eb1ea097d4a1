// Which addon CertificateSigningRequests the hub approves without a human. Pure (the PKCS#10
// signature check aside, which is async): the caller passes the CSR, the addon's
// ManagedClusterAddOn and the ManagedCluster it read.
//
// An addon CSR is approved only when all of these hold:
//   - it carries the labels open-cluster-management.io/cluster-name=<c> and addon-name=<a>, the
//     ManagedClusterAddOn <a> in namespace <c> exists, and the hub's own registrations for it
//     (registration/configs.ts; not status.registrations, which the cluster may write) include one
//     of its signer whose subject the request asks for exactly (CN; O and OU as sets);
//   - client-certificate usages only; a PKCS#10 request whose signature verifies;
//   - cluster <c> exists and is accepted;
//   - the requester is cluster <c>'s registration identity (user system:open-cluster-management:<c>:<agent>
//     in group system:open-cluster-management:<c>), or, for a kube-apiserver-client certificate, the
//     very addon identity it names (a renewal by the agent itself).
// So a bootstrap token, another cluster's identity and another addon's identity never obtain an
// addon identity, and no addon identity obtains a cluster's (registration/csr-policy.ts in registration/hub keeps
// that side). Nothing is denied: a CSR that fails is left for a human or another approver.
import '../../../pki/index.ts'; // sets @peculiar/x509's crypto provider (and the reflect polyfill it needs)
import * as x509 from '@peculiar/x509';
import {
  addonNameLabel,
  kubeApiserverClientSignerName,
  type ManagedClusterAddOn,
  type RegistrationConfig,
} from '../../../api/addon.ts';
import {
  type AddonCertificateSubject,
  addonClusterGroup,
  addonUserPrefix,
  isValidAddonAgentName,
  registrationProblem,
  registrationSubject,
} from '../../../api/addon-registration.ts';
import { clusterNameLabel, type ManagedCluster } from '../../../api/cluster.ts';
import type { CertificateSigningRequest } from '../../../registration/hub/resources.ts';

/** Usages a client certificate may ask for; 'client auth' is required. */
const allowedUsages: readonly string[] = ['client auth', 'digital signature', 'key encipherment'];

export type AddonCsrCheck =
  | { ok: true; cluster: string; registration: RegistrationConfig; subject: AddonCertificateSubject }
  | { ok: false; problem: string };

/** The subject of a PEM PKCS#10 request, OU included. Throws when it is not one. */
export function addonRequestSubject(requestPem: string): AddonCertificateSubject {
  const csr = new x509.Pkcs10CertificateRequest(requestPem);
  return {
    commonName: csr.subjectName.getField('CN')[0] ?? '',
    organizations: csr.subjectName.getField('O'),
    organizationalUnits: csr.subjectName.getField('OU'),
  };
}

const sameSet = (a: readonly string[], b: readonly string[]) => {
  const x = [...new Set(a)].sort();
  const y = [...new Set(b)].sort();
  return x.length === y.length && x.every((v, i) => v === y[i]);
};

/** Whether `subject` is what `registration` asks for (an empty user: the default user, any agent). */
export function subjectMatches(
  subject: AddonCertificateSubject,
  registration: RegistrationConfig,
  cluster: string,
  addon: string,
): boolean {
  const want = registrationSubject(registration, cluster, addon, '');
  if (registration.subject?.user) {
    if (subject.commonName !== want.commonName) return false;
  } else {
    const prefix = addonUserPrefix(cluster, addon);
    const agent = subject.commonName.startsWith(prefix) ? subject.commonName.slice(prefix.length) : '';
    if (!isValidAddonAgentName(agent)) return false;
  }
  return (
    sameSet(subject.organizations, want.organizations) &&
    sameSet(subject.organizationalUnits, want.organizationalUnits)
  );
}

/**
 * Whether `csr` asks for one of `registrations` (the hub's for `mca` of addon `addon`), with client
 * usages: the subject check, before who asked. Used for approval and again before a custom signer
 * signs.
 */
export function checkAddonCsrSubject(
  csr: CertificateSigningRequest,
  addon: string,
  mca: ManagedClusterAddOn | undefined,
  registrations: readonly RegistrationConfig[],
): AddonCsrCheck {
  const fail = (problem: string): AddonCsrCheck => ({ ok: false, problem });
  const labels = csr.metadata?.labels ?? {};
  const cluster = labels[clusterNameLabel];
  if (labels[addonNameLabel] !== addon) return fail(`is not labelled ${addonNameLabel}=${addon}`);
  if (!cluster) return fail(`has no ${clusterNameLabel} label`);
  if (!mca || mca.metadata.namespace !== cluster || mca.metadata.name !== addon) {
    return fail(`cluster ${cluster} has no ManagedClusterAddOn ${addon}`);
  }
  const usages = csr.spec?.usages ?? [];
  const foreign = usages.filter((u) => !allowedUsages.includes(u));
  if (foreign.length > 0) return fail(`asks for usages ${foreign.join(', ')} beyond a client certificate`);
  if (!usages.includes('client auth')) return fail('does not ask for the client auth usage');

  let subject: AddonCertificateSubject;
  try {
    subject = addonRequestSubject(Buffer.from(csr.spec.request ?? '', 'base64').toString('utf8'));
  } catch {
    return fail('spec.request is not a PEM PKCS#10 certificate request');
  }
  const candidates = registrations.filter(
    (r) => r.signerName === csr.spec.signerName && registrationProblem(r, cluster, addon) === undefined,
  );
  if (candidates.length === 0) {
    return fail(
      `ManagedClusterAddOn ${cluster}/${addon} has no registration for signer ${csr.spec.signerName}`,
    );
  }
  const registration = candidates.find((r) => subjectMatches(subject, r, cluster, addon));
  if (!registration) {
    return fail(
      `subject CN=${subject.commonName} O=[${subject.organizations.join(', ')}] OU=[${subject.organizationalUnits.join(', ')}] is not what a registration of ${cluster}/${addon} asks for`,
    );
  }
  return { ok: true, cluster, registration, subject };
}

/** Why the requester of `csr` may not obtain `subject` for `cluster`, or undefined when it may. */
export function addonCsrRequesterProblem(
  csr: CertificateSigningRequest,
  cluster: string,
  addon: string,
  subject: AddonCertificateSubject,
): string | undefined {
  const requester = csr.spec.username ?? '';
  const groups = csr.spec.groups ?? [];
  const clusterPrefix = `system:open-cluster-management:${cluster}:`;
  const clusterAgent = requester.startsWith(clusterPrefix) ? requester.slice(clusterPrefix.length) : '';
  if (isValidAddonAgentName(clusterAgent) && groups.includes(`system:open-cluster-management:${cluster}`)) {
    return undefined;
  }
  if (
    csr.spec.signerName === kubeApiserverClientSignerName &&
    requester === subject.commonName &&
    groups.includes(addonClusterGroup(cluster, addon))
  ) {
    return undefined;
  }
  return `requested by ${requester || 'an unknown user'}, neither cluster ${cluster}'s registration identity nor the addon identity it names`;
}

/** The subject, requester and cluster checks together (signature aside): what approval needs. */
export function checkAddonCsr(
  csr: CertificateSigningRequest,
  addon: string,
  mca: ManagedClusterAddOn | undefined,
  cluster: ManagedCluster | undefined,
  registrations: readonly RegistrationConfig[],
): AddonCsrCheck {
  const check = checkAddonCsrSubject(csr, addon, mca, registrations);
  if (!check.ok) return check;
  if (!cluster) return { ok: false, problem: `cluster ${check.cluster} does not exist` };
  if (cluster.spec?.hubAcceptsClient !== true) {
    return { ok: false, problem: `cluster ${check.cluster} is not accepted by the hub` };
  }
  const problem = addonCsrRequesterProblem(csr, check.cluster, addon, check.subject);
  return problem ? { ok: false, problem } : check;
}

/** Whether the request's self-signature verifies (the key holder asked for it). */
export async function addonRequestVerifies(csr: CertificateSigningRequest): Promise<boolean> {
  try {
    const pem = Buffer.from(csr.spec.request ?? '', 'base64').toString('utf8');
    return await new x509.Pkcs10CertificateRequest(pem).verify();
  } catch {
    return false;
  }
}
