import 'reflect-metadata'; // before @peculiar/x509, as src/pki does
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { describe, expect, it } from 'vitest';
import { clusterAgentGroups, clusterNameLabel } from '../../../src/api/index.ts';
import { createCertificateRequest } from '../../../src/pki/index.ts';
import {
  autoApprovalReason,
  type ClusterCsrIdentity,
  checkClusterCsr,
  classifyCsrRequest,
  isCsrDecided,
  joinedBootstrapRefusal,
  manualApprovalProblem,
  refusalWithoutLookup,
} from '../../../src/registration/hub/csr-policy.ts';
import {
  type CertificateSigningRequest,
  CsrApprovalReason,
  kubeApiserverClientSignerName,
} from '../../../src/registration/hub/resources.ts';
import { agentSubject } from '../../../src/tunnel/identity.ts';

const signers = [kubeApiserverClientSignerName];
const clientUsages = ['client auth', 'digital signature', 'key encipherment'];

async function csrFor(
  subject: { commonName: string; organizations: string[] },
  overrides: { label?: string | null; signerName?: string; usages?: string[]; request?: string } = {},
): Promise<CertificateSigningRequest> {
  const { csrPem } = await createCertificateRequest(subject);
  const label = overrides.label === undefined ? 'cluster1' : overrides.label;
  return {
    metadata: { name: 'csr', labels: label === null ? {} : { [clusterNameLabel]: label } },
    spec: {
      request: overrides.request ?? Buffer.from(csrPem).toString('base64'),
      signerName: overrides.signerName ?? kubeApiserverClientSignerName,
      usages: overrides.usages ?? clientUsages,
    },
  };
}

const problemOf = (csr: CertificateSigningRequest) => {
  const check = checkClusterCsr(csr, signers);
  return check.ok ? undefined : check.problem;
};

describe('checkClusterCsr', () => {
  it("accepts exactly the cluster's agent identity, with client usages", async () => {
    const check = checkClusterCsr(await csrFor(agentSubject('cluster1', 'agent-a')), signers);
    expect(check).toEqual({
      ok: true,
      identity: {
        cluster: 'cluster1',
        agent: 'agent-a',
        user: 'system:open-cluster-management:cluster1:agent-a',
      },
    });
  });

  it('reads organizations Go puts in one multi-valued RDN (O=a + O=b), as OCM agents send them', async () => {
    const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
      'sign',
      'verify',
    ]);
    const request = await x509.Pkcs10CertificateRequestGenerator.create({
      name: [
        { O: clusterAgentGroups('cluster1') },
        { CN: ['system:open-cluster-management:cluster1:agent-a'] },
      ],
      keys: keys as webcrypto.CryptoKeyPair,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    });
    const csr = await csrFor(agentSubject('cluster1', 'x'), {
      request: Buffer.from(request.toString('pem')).toString('base64'),
    });
    expect(checkClusterCsr(csr, signers).ok).toBe(true);
  });

  it.each([
    [
      'an extra organization',
      { ...agentSubject('cluster1', 'a'), organizations: [...clusterAgentGroups('cluster1'), 'admins'] },
    ],
    [
      'a missing organization',
      { ...agentSubject('cluster1', 'a'), organizations: clusterAgentGroups('cluster1').slice(0, 1) },
    ],
    [
      "another cluster's organizations",
      { ...agentSubject('cluster1', 'a'), organizations: clusterAgentGroups('cluster2') },
    ],
    [
      "another cluster's CN",
      { ...agentSubject('cluster1', 'a'), commonName: agentSubject('cluster2', 'a').commonName },
    ],
    [
      'a CN without agent',
      { ...agentSubject('cluster1', 'a'), commonName: 'system:open-cluster-management:cluster1:' },
    ],
    ['a CN with an extra segment', agentSubject('cluster1', 'a:b')],
    ['a foreign label (valid identity of cluster2)', agentSubject('cluster2', 'a')],
  ])('refuses %s', async (_what, subject) => {
    expect(problemOf(await csrFor(subject))).toBeDefined();
  });

  it('refuses a missing or invalid label, another signer, non-client usages, garbage requests', async () => {
    const subject = agentSubject('cluster1', 'a');
    expect(problemOf(await csrFor(subject, { label: null }))).toMatch(/no .* label/);
    expect(problemOf(await csrFor(agentSubject('Bad_Name', 'a'), { label: 'Bad_Name' }))).toMatch(/DNS-1123/);
    expect(problemOf(await csrFor(agentSubject('kube-system', 'a'), { label: 'kube-system' }))).toMatch(
      /system/,
    );
    expect(problemOf(await csrFor(subject, { signerName: 'kubernetes.io/kubelet-serving' }))).toMatch(
      /signer/,
    );
    expect(problemOf(await csrFor(subject, { usages: ['client auth', 'server auth'] }))).toMatch(
      /server auth/,
    );
    expect(problemOf(await csrFor(subject, { usages: ['digital signature'] }))).toMatch(/client auth/);
    expect(problemOf(await csrFor(subject, { request: Buffer.from('nope').toString('base64') }))).toMatch(
      /PKCS#10/,
    );
  });
});

const identity: ClusterCsrIdentity = {
  cluster: 'cluster1',
  agent: 'a',
  user: 'system:open-cluster-management:cluster1:a',
};
const requestedBy = (username: string, groups: string[]) =>
  ({
    spec: { request: '', signerName: kubeApiserverClientSignerName, username, groups },
  }) as CertificateSigningRequest;

describe('autoApprovalReason', () => {
  it('approves a renewal by the very identity it names', () => {
    const csr = requestedBy(identity.user, clusterAgentGroups('cluster1'));
    expect(autoApprovalReason(csr, identity, [], true)?.reason).toBe(CsrApprovalReason.Auto);
  });

  it("does not count another agent of the cluster, or the user without the cluster's group, as a renewal", () => {
    const other = requestedBy('system:open-cluster-management:cluster1:b', clusterAgentGroups('cluster1'));
    expect(
      autoApprovalReason(other, identity, ['system:open-cluster-management:cluster1:b'], false),
    ).toBeUndefined();
    expect(
      autoApprovalReason(requestedBy(identity.user, ['system:authenticated']), identity, [], false),
    ).toBeUndefined();
  });

  it('approves bootstrap requests of listed users only', () => {
    const csr = requestedBy('system:bootstrap:abc', ['system:bootstrappers']);
    expect(autoApprovalReason(csr, identity, ['system:bootstrap:abc'], false)?.reason).toBe(
      CsrApprovalReason.Auto,
    );
    expect(autoApprovalReason(csr, identity, ['someone-else'], false)).toBeUndefined();
  });

  it('a bootstrap-token holder cannot obtain the identity of a cluster that has joined', () => {
    const csr = requestedBy('system:bootstrap:abc', ['system:bootstrappers']);
    expect(autoApprovalReason(csr, identity, ['system:bootstrap:abc'], true)).toBeUndefined();
  });

  it("one cluster's identity never yields another's, even when listed as auto-approved", () => {
    const cluster2Agent = 'system:open-cluster-management:cluster2:a';
    const csr = requestedBy(cluster2Agent, clusterAgentGroups('cluster2'));
    expect(classifyCsrRequest(csr, identity).kind).toBe('foreign');
    expect(autoApprovalReason(csr, identity, [cluster2Agent], false)).toBeUndefined();
  });
});

describe('refusalWithoutLookup (what a CSR flood costs the hub)', () => {
  const bootstrap = requestedBy('system:bootstrap:abc', ['system:bootstrappers']);

  it('refuses from the cache alone what can never be approved automatically', () => {
    const foreign = requestedBy('system:open-cluster-management:cluster2:a', clusterAgentGroups('cluster2'));
    expect(refusalWithoutLookup(foreign, identity, [], false)).toContain('another cluster identity');
    expect(refusalWithoutLookup(bootstrap, identity, ['someone-else'], false)).toContain('tether accept');
    expect(refusalWithoutLookup(bootstrap, identity, ['system:bootstrap:abc'], true)).toBe(
      joinedBootstrapRefusal,
    );
  });

  it('leaves a renewal, and a bootstrap request for a cluster the cache shows unjoined, to a fresh look', () => {
    const renewal = requestedBy(identity.user, clusterAgentGroups('cluster1'));
    expect(refusalWithoutLookup(renewal, identity, [], true)).toBeUndefined();
    expect(refusalWithoutLookup(bootstrap, identity, ['system:bootstrap:abc'], false)).toBeUndefined();
  });
});

describe('isCsrDecided', () => {
  it('is true once Approved or Denied, not for Failed alone', () => {
    const withConditions = (type: string) =>
      ({
        spec: {},
        status: { conditions: [{ type, status: 'True' }] },
      }) as unknown as CertificateSigningRequest;
    expect(isCsrDecided(withConditions('Approved'))).toBe(true);
    expect(isCsrDecided(withConditions('Denied'))).toBe(true);
    expect(isCsrDecided(withConditions('Failed'))).toBe(false);
  });
});

describe('manualApprovalProblem (clusteradm accept --clusters eligibility)', () => {
  const by = (username: string, groups: string[]) =>
    ({
      spec: { request: '', signerName: kubeApiserverClientSignerName, username, groups },
    }) as CertificateSigningRequest;

  it("accepts clusteradm's bootstrap requesters in clusteradm's groups", () => {
    expect(
      manualApprovalProblem(by('system:bootstrap:abc123', ['system:bootstrappers:managedcluster'])),
    ).toBeUndefined();
    const sa = 'system:serviceaccount:open-cluster-management:agent-registration-bootstrap';
    expect(manualApprovalProblem(by(sa, ['system:serviceaccounts:open-cluster-management']))).toBeUndefined();
    const grpc = 'system:serviceaccount:open-cluster-management-hub:grpc-server-sa';
    expect(
      manualApprovalProblem(by(grpc, ['system:serviceaccounts:open-cluster-management-hub'])),
    ).toBeUndefined();
  });

  it('refuses other users, and eligible users without an eligible group', () => {
    expect(manualApprovalProblem(by('alice', ['system:bootstrappers:managedcluster']))).toContain('alice');
    expect(
      manualApprovalProblem(
        by('system:serviceaccount:open-cluster-management:cluster-bootstrap', [
          'system:serviceaccounts:open-cluster-management',
        ]),
      ),
    ).toBeDefined();
    expect(manualApprovalProblem(by('system:bootstrap:abc123', ['system:authenticated']))).toContain(
      '--skip-approve-check',
    );
  });
});
