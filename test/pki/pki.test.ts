import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  certificateInfo,
  certificateRequestSubject,
  createCertificateAuthority,
  createCertificateRequest,
  issueCertificate,
  loadCertificateAuthority,
  signCertificateRequest,
} from '../../src/pki/index.ts';

describe('pki', () => {
  it('issues a server certificate that verifies against its CA and carries the SANs', async () => {
    const ca = await createCertificateAuthority('test-ca');
    const issued = await issueCertificate(ca, {
      commonName: 'kube-apiserver',
      usage: 'server',
      dnsNames: ['localhost', 'gateway.tether.svc'],
      ipAddresses: ['127.0.0.1'],
    });
    const cert = new X509Certificate(issued.certPem);
    expect(cert.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
    expect(cert.subjectAltName).toContain('DNS:gateway.tether.svc');
    expect(cert.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(cert.checkPrivateKey((await import('node:crypto')).createPrivateKey(issued.keyPem))).toBe(true);
    expect(new X509Certificate(ca.certPem).ca).toBe(true);
    expect(cert.ca).toBe(false);
  });

  it('keeps every organization of a client certificate subject', async () => {
    const ca = await createCertificateAuthority('test-ca');
    const issued = await issueCertificate(ca, {
      commonName: 'system:open-cluster-management:cluster1:agent',
      organizations: [
        'system:open-cluster-management:cluster1',
        'system:open-cluster-management:managed-clusters',
      ],
      usage: 'client',
      validitySeconds: 3600,
    });
    const info = certificateInfo(issued.certPem);
    expect(info.commonName).toBe('system:open-cluster-management:cluster1:agent');
    expect(info.organizations).toEqual([
      'system:open-cluster-management:cluster1',
      'system:open-cluster-management:managed-clusters',
    ]);
    const lifetime = info.notAfter.getTime() - info.notBefore.getTime();
    expect(lifetime).toBeGreaterThan(3600_000);
    expect(lifetime).toBeLessThan(3600_000 + 120_000);
  });

  it('signs a CSR after reloading the CA from PEM, with the subject the CSR asked for', async () => {
    const ca = await createCertificateAuthority('signer');
    const reloaded = await loadCertificateAuthority(ca.certPem, ca.keyPem);
    const req = await createCertificateRequest({ commonName: 'agent', organizations: ['org-a'] });
    expect(certificateRequestSubject(req.csrPem)).toEqual({ commonName: 'agent', organizations: ['org-a'] });
    const certPem = await signCertificateRequest(reloaded, req.csrPem, {
      usage: 'client',
      validitySeconds: 600,
    });
    const cert = new X509Certificate(certPem);
    expect(cert.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
    expect(certificateInfo(certPem).organizations).toEqual(['org-a']);
  });

  it('rejects a CSR whose signature was tampered with', async () => {
    const ca = await createCertificateAuthority('signer');
    const req = await createCertificateRequest({ commonName: 'agent' });
    const lines = req.csrPem.trim().split('\n');
    const body = lines.slice(1, -1).join('');
    const der = Buffer.from(body, 'base64');
    der[der.length - 5] = (der[der.length - 5] ?? 0) ^ 0xff;
    const tampered = `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
    await expect(signCertificateRequest(ca, tampered, { usage: 'client' })).rejects.toThrow();
  });
});

describe('certificateInfo on Go-style subjects', () => {
  it('splits a multi-valued RDN into its organizations', async () => {
    const x509 = await import('@peculiar/x509');
    const ca = await createCertificateAuthority('go-style');
    const keys = (await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
      'sign',
      'verify',
    ])) as import('node:crypto').webcrypto.CryptoKeyPair;
    const cert = await x509.X509CertificateGenerator.create({
      subject: [
        { O: ['system:open-cluster-management:c1', 'system:open-cluster-management:managed-clusters'] },
        { CN: ['agent'] },
      ],
      issuer: ca.cert.subjectName,
      publicKey: keys.publicKey,
      signingKey: ca.signingKey,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    });
    const info = certificateInfo(cert.toString('pem'));
    expect(info.organizations).toEqual([
      'system:open-cluster-management:c1',
      'system:open-cluster-management:managed-clusters',
    ]);
    expect(info.commonName).toBe('agent');
  });
});
