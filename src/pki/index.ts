// PKI for tether: certificate authorities, serving and client certificates, CSRs.
// ECDSA P-256 keys (fast to generate, accepted by every Kubernetes component), PEM everywhere:
// certificates as "CERTIFICATE", private keys as PKCS#8 "PRIVATE KEY". Built on @peculiar/x509 over
// node's WebCrypto. This module never logs or persists anything; callers decide where PEMs go.
import 'reflect-metadata'; // @peculiar/x509's dependency injection needs it loaded first
import { X509Certificate as NodeX509Certificate, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

const keyAlgorithm: webcrypto.EcKeyGenParams = { name: 'ECDSA', namedCurve: 'P-256' };
const signingAlgorithm: webcrypto.EcdsaParams = { name: 'ECDSA', hash: 'SHA-256' };

export type CertificateUsage = 'server' | 'client' | 'server-and-client';

export interface KeyPairPem {
  certPem: string;
  keyPem: string;
}

/** A CA that can issue certificates: its PEMs plus the parsed key for signing. */
export interface CertificateAuthority extends KeyPairPem {
  readonly cert: x509.X509Certificate;
  readonly signingKey: CryptoKey;
}

export interface SubjectOptions {
  commonName: string;
  organizations?: string[];
}

export interface IssueOptions extends SubjectOptions {
  usage: CertificateUsage;
  dnsNames?: string[];
  ipAddresses?: string[];
  /** default one year */
  validitySeconds?: number;
}

async function generateKeys(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(keyAlgorithm, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function exportPrivateKeyPem(key: CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

/** Subject as separate RDNs (O… then CN), the way Go's crypto/x509 writes pkix.Name. */
function subjectName(subject: SubjectOptions): x509.JsonName {
  const rdns: x509.JsonName = [];
  for (const org of subject.organizations ?? []) rdns.push({ O: [org] });
  rdns.push({ CN: [subject.commonName] });
  return rdns;
}

function serialNumber(): string {
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0] ?? 0) & 0x7f; // positive
  return Buffer.from(bytes).toString('hex');
}

function validity(seconds: number): { notBefore: Date; notAfter: Date } {
  const now = Date.now();
  // Backdate a little so a peer with a slightly slow clock accepts a fresh certificate.
  return { notBefore: new Date(now - 60_000), notAfter: new Date(now + seconds * 1000) };
}

/** Creates a self-signed CA certificate and key. */
export async function createCertificateAuthority(
  commonName: string,
  validitySeconds = 10 * 365 * 24 * 3600,
): Promise<CertificateAuthority> {
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: subjectName({ commonName }),
    ...validity(validitySeconds),
    keys,
    signingAlgorithm,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return {
    cert,
    signingKey: keys.privateKey,
    certPem: cert.toString('pem'),
    keyPem: await exportPrivateKeyPem(keys.privateKey),
  };
}

/** Loads a CA from PEMs (e.g. one written by an earlier run). */
export async function loadCertificateAuthority(
  certPem: string,
  keyPem: string,
): Promise<CertificateAuthority> {
  const cert = new x509.X509Certificate(certPem);
  const der = x509.PemConverter.decodeFirst(keyPem);
  const signingKey = await webcrypto.subtle.importKey('pkcs8', der, keyAlgorithm, true, ['sign']);
  return { cert, signingKey, certPem, keyPem };
}

function usageExtensions(usage: CertificateUsage): x509.Extension[] {
  const ekus: string[] = [];
  if (usage !== 'client') ekus.push(x509.ExtendedKeyUsage.serverAuth);
  if (usage !== 'server') ekus.push(x509.ExtendedKeyUsage.clientAuth);
  return [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(
      x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
      true,
    ),
    new x509.ExtendedKeyUsageExtension(ekus, false),
  ];
}

function sanExtension(dnsNames: string[] = [], ipAddresses: string[] = []): x509.Extension[] {
  const names: x509.JsonGeneralName[] = [
    ...dnsNames.map((value) => ({ type: 'dns' as const, value })),
    ...ipAddresses.map((value) => ({ type: 'ip' as const, value })),
  ];
  return names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names, false)] : [];
}

async function signCertificate(
  ca: CertificateAuthority,
  publicKey: CryptoKey | x509.PublicKey,
  opts: IssueOptions,
): Promise<x509.X509Certificate> {
  return x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(),
    subject: subjectName(opts),
    issuer: ca.cert.subjectName,
    ...validity(opts.validitySeconds ?? 365 * 24 * 3600),
    publicKey,
    signingKey: ca.signingKey,
    signingAlgorithm,
    extensions: [
      ...usageExtensions(opts.usage),
      ...sanExtension(opts.dnsNames, opts.ipAddresses),
      await x509.AuthorityKeyIdentifierExtension.create(ca.cert),
    ],
  });
}

/** Issues a new key and a certificate for it, signed by the CA. */
export async function issueCertificate(ca: CertificateAuthority, opts: IssueOptions): Promise<KeyPairPem> {
  const keys = await generateKeys();
  const cert = await signCertificate(ca, keys.publicKey, opts);
  return { certPem: cert.toString('pem'), keyPem: await exportPrivateKeyPem(keys.privateKey) };
}

/** A new key and a PKCS#10 request for it (what an agent sends in a CertificateSigningRequest). */
export async function createCertificateRequest(
  subject: SubjectOptions,
): Promise<{ csrPem: string; keyPem: string }> {
  const keys = await generateKeys();
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: subjectName(subject),
    keys,
    signingAlgorithm,
  });
  return { csrPem: csr.toString('pem'), keyPem: await exportPrivateKeyPem(keys.privateKey) };
}

/** Subject of a PKCS#10 request, for policy checks before approval or signing. */
export function certificateRequestSubject(csrPem: string): { commonName: string; organizations: string[] } {
  const csr = new x509.Pkcs10CertificateRequest(csrPem);
  return {
    commonName: csr.subjectName.getField('CN')[0] ?? '',
    organizations: csr.subjectName.getField('O'),
  };
}

/** Signs a PKCS#10 request with the CA after verifying its self-signature. */
export async function signCertificateRequest(
  ca: CertificateAuthority,
  csrPem: string,
  opts: { usage: CertificateUsage; validitySeconds?: number },
): Promise<string> {
  const csr = new x509.Pkcs10CertificateRequest(csrPem);
  if (!(await csr.verify())) throw new Error('certificate request signature does not verify');
  const subject = certificateRequestSubject(csrPem);
  const cert = await signCertificate(ca, csr.publicKey, { ...subject, ...opts });
  return cert.toString('pem');
}

export interface CertificateInfo {
  commonName: string;
  organizations: string[];
  notBefore: Date;
  notAfter: Date;
  issuer: string;
}

/** Reads what policy code needs from a PEM certificate (the first one in the PEM). */
export function certificateInfo(certPem: string): CertificateInfo {
  const cert = new NodeX509Certificate(certPem);
  // One line per RDN; Go writes several organizations as one multi-valued RDN ("O=a + O=b").
  const fields = cert.subject.split('\n').flatMap((rdn) => rdn.split(/ \+ (?=[A-Za-z]+=)/));
  return {
    commonName: fields.find((f) => f.startsWith('CN='))?.slice(3) ?? '',
    organizations: fields.filter((f) => f.startsWith('O=')).map((f) => f.slice(2)),
    notBefore: new Date(cert.validFrom),
    notAfter: new Date(cert.validTo),
    issuer: cert.issuer,
  };
}
