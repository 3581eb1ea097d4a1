// The CSR of one addon registration, as OCM's registration agent makes it: a fresh ECDSA P-256
// key, a PKCS#10 request for the registration's subject (CN, O, OU) with the DNS name
// <addon>.addon.open-cluster-management.io, and a CertificateSigningRequest
// `addon-<cluster>-<addon>-<random>` labelled with the cluster and the addon, for the registration's
// signer, client usages only, created with the cluster's own hub credential. Waiting for the
// certificate is the caller's (registration.ts watches the CSRs). No I/O but the one create.
import { webcrypto } from 'node:crypto';
import '../../../pki/index.ts'; // sets @peculiar/x509's crypto provider
import * as x509 from '@peculiar/x509';
import { addonNameLabel } from '../../../api/addon.ts';
import {
  type AddonCertificateSubject,
  addonCsrDnsName,
  addonCsrGenerateName,
} from '../../../api/addon-registration.ts';
import { clusterNameLabel } from '../../../api/cluster.ts';
import type { ResourceClient } from '../../../kube/index.ts';
import { b64, type CertificateSigningRequest, clientCertificateUsages, unb64 } from '../kinds.ts';

const keyAlgorithm: webcrypto.EcKeyGenParams = { name: 'ECDSA', namedCurve: 'P-256' };
const signingAlgorithm: webcrypto.EcdsaParams = { name: 'ECDSA', hash: 'SHA-256' };

/** A new key and a PKCS#10 request for `subject` (RDNs O…, OU…, CN as Go's pkix.Name writes them). */
export async function createAddonCertificateRequest(
  subject: AddonCertificateSubject,
  dnsName: string,
): Promise<{ csrPem: string; keyPem: string }> {
  const keys = (await webcrypto.subtle.generateKey(keyAlgorithm, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const name: x509.JsonName = [
    ...subject.organizations.map((o) => ({ O: [o] })),
    ...subject.organizationalUnits.map((ou) => ({ OU: [ou] })),
    { CN: [subject.commonName] },
  ];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name,
    keys: keys as unknown as Parameters<typeof x509.Pkcs10CertificateRequestGenerator.create>[0]['keys'],
    signingAlgorithm,
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: dnsName }])],
  });
  const der = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  return { csrPem: csr.toString('pem'), keyPem: x509.PemConverter.encode(der, 'PRIVATE KEY') };
}

export interface AddonCsrRequest {
  cluster: string;
  addon: string;
  signerName: string;
  subject: AddonCertificateSubject;
  /** spec.expirationSeconds (≥ 600); unset: the signer's default */
  expirationSeconds?: number;
}

/** Create the CSR of one registration; returns its name and the private key that goes with it. */
export async function createAddonCsr(
  csrs: ResourceClient<CertificateSigningRequest>,
  request: AddonCsrRequest,
  signal?: AbortSignal,
): Promise<{ csrName: string; keyPem: string }> {
  const { csrPem, keyPem } = await createAddonCertificateRequest(
    request.subject,
    addonCsrDnsName(request.addon),
  );
  const created = await csrs.create(
    {
      metadata: {
        generateName: addonCsrGenerateName(request.cluster, request.addon),
        labels: { [clusterNameLabel]: request.cluster, [addonNameLabel]: request.addon },
      },
      spec: {
        request: b64(csrPem),
        signerName: request.signerName,
        usages: clientCertificateUsages,
        ...(request.expirationSeconds ? { expirationSeconds: request.expirationSeconds } : {}),
      },
    },
    { signal },
  );
  return { csrName: created.metadata?.name ?? '', keyPem };
}

/** What became of a CSR: its certificate, why it was refused, or undefined while it waits. */
export function addonCsrOutcome(
  csr: CertificateSigningRequest,
): { certPem: string } | { refused: string } | undefined {
  const conditions = csr.status?.conditions ?? [];
  const refused = conditions.find((c) => (c.type === 'Denied' || c.type === 'Failed') && c.status === 'True');
  if (refused) return { refused: [refused.type, refused.reason, refused.message].filter(Boolean).join(': ') };
  const approved = conditions.some((c) => c.type === 'Approved' && c.status === 'True');
  const certPem = unb64(csr.status?.certificate);
  return approved && certPem.includes('BEGIN CERTIFICATE') ? { certPem } : undefined;
}
