// The hub token Secret: what a new one holds, how a refresh merges into one others have touched,
// and how the agent tells that someone changed it.
import { describe, expect, it } from 'vitest';
import type { ManagedServiceAccount } from '../../src/api/index.ts';
import { createCertificateAuthority } from '../../src/pki/index.ts';
import {
  alteredSecretKeys,
  mergeTokenSecret,
  newTokenSecret,
  secretToken,
  tokenKubeconfig,
  tokenSecretData,
} from '../../src/serviceaccount/agent/token-secret.ts';
import type { Secret } from '../../src/serviceaccount/core.ts';

const label = 'authentication.open-cluster-management.io/is-managed-serviceaccount';
const ca = await createCertificateAuthority('managed-ca');
const endpoint = { name: 'cluster1', server: 'https://10.0.0.1:6443', caPem: ca.certPem };
const msa: ManagedServiceAccount = {
  apiVersion: 'authentication.open-cluster-management.io/v1alpha1',
  kind: 'ManagedServiceAccount',
  metadata: { name: 'gw', namespace: 'cluster1', uid: 'uid-2' },
};
const decode = (v: string | undefined) => Buffer.from(v ?? '', 'base64').toString('utf8');

describe('token Secret', () => {
  it('is Opaque, labelled, controlled by the MSA (storage version) and holds token, ca.crt and kubeconfig', () => {
    const s = newTokenSecret(msa, tokenSecretData(endpoint, 'tok-1'));
    expect(s.type).toBe('Opaque');
    expect(s.metadata).toMatchObject({ name: 'gw', namespace: 'cluster1', labels: { [label]: 'true' } });
    expect(s.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'authentication.open-cluster-management.io/v1beta1',
        kind: 'ManagedServiceAccount',
        name: 'gw',
        uid: 'uid-2',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(secretToken(s)).toBe('tok-1');
    expect(decode(s.data?.['ca.crt'])).toBe(ca.certPem);
    const kubeconfig = decode(s.data?.kubeconfig);
    expect(kubeconfig).toBe(tokenKubeconfig(endpoint, 'tok-1'));
    expect(kubeconfig).toContain('server: https://10.0.0.1:6443');
    expect(kubeconfig).toContain('token: tok-1');
  });

  it('keeps labels, annotations, other owners and other keys when a refresh merges in', () => {
    const existing: Secret = {
      ...newTokenSecret(
        { ...msa, metadata: { ...msa.metadata, uid: 'uid-1' } },
        tokenSecretData(endpoint, 'old'),
      ),
      metadata: {
        name: 'gw',
        namespace: 'cluster1',
        resourceVersion: '7',
        labels: { team: 'a' },
        annotations: { note: 'keep' },
        ownerReferences: [
          { apiVersion: 'v1', kind: 'ConfigMap', name: 'other', uid: 'cm-1' },
          { apiVersion: 'x/v1', kind: 'ManagedServiceAccount', name: 'gw', uid: 'uid-1', controller: true },
        ],
      },
    };
    existing.data = { ...existing.data, extra: 'eA==' };
    const merged = mergeTokenSecret(existing, msa, tokenSecretData(endpoint, 'new'));
    expect(merged?.metadata.resourceVersion).toBe('7');
    expect(merged?.metadata.labels).toEqual({ team: 'a', [label]: 'true' });
    expect(merged?.metadata.annotations).toEqual({ note: 'keep' });
    expect(merged?.metadata.ownerReferences?.map((r) => r.uid)).toEqual(['cm-1', 'uid-2']);
    expect(merged?.data?.extra).toBe('eA==');
    expect(secretToken(merged)).toBe('new');
    expect(merged && mergeTokenSecret(merged, msa, tokenSecretData(endpoint, 'new'))).toBeUndefined();
  });

  it('names the keys someone changed', () => {
    const s = newTokenSecret(msa, tokenSecretData(endpoint, 'tok'));
    expect(alteredSecretKeys(s, endpoint)).toEqual([]);
    const tampered = { ...s, data: { ...s.data, 'ca.crt': 'eA==' } };
    expect(alteredSecretKeys(tampered, endpoint)).toEqual(['ca.crt']);
    const noToken = { ...s, data: { 'ca.crt': s.data?.['ca.crt'] ?? '' } };
    expect(alteredSecretKeys(noToken, endpoint)).toEqual(['token']);
    expect(alteredSecretKeys(s, { ...endpoint, server: 'https://gateway:443' })).toEqual(['kubeconfig']);
  });
});

describe('token Secret for a user-server', () => {
  it("keeps ca.crt the managed apiserver's CA; the kubeconfig names the user-server and trusts its CA", async () => {
    const userServerCa = await createCertificateAuthority('user-server-ca');
    const viaUserServer = {
      ...endpoint,
      server: 'https://10.0.0.5:31092/cluster1',
      kubeconfigCaPem: userServerCa.certPem,
    };
    const data = tokenSecretData(viaUserServer, 'tok-1');
    expect(decode(data['ca.crt'])).toBe(ca.certPem);
    const kubeconfig = decode(data.kubeconfig);
    expect(kubeconfig).toContain('server: https://10.0.0.5:31092/cluster1');
    expect(kubeconfig).toContain(Buffer.from(userServerCa.certPem).toString('base64'));
    expect(kubeconfig).not.toContain(Buffer.from(ca.certPem).toString('base64'));
    // a Secret written for the managed apiserver is altered in `kubeconfig` only
    const old = newTokenSecret(msa, tokenSecretData(endpoint, 'tok-1'));
    expect(alteredSecretKeys(old, viaUserServer)).toEqual(['kubeconfig']);
  });
});
