// When a stored hub-kubeconfig-secret may be reused on restart, and what the agent writes into it.
import { KubeConfig } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { HubKubeconfigSecretKey } from '../../../src/api/index.ts';
import { kubeconfigFromParts, kubeconfigToYaml } from '../../../src/kube/index.ts';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  issueCertificate,
} from '../../../src/pki/index.ts';
import type { HubEndpoint } from '../../../src/registration/agent/bootstrap-kubeconfig.ts';
import {
  credentialsFromCertificate,
  credentialsFromSecret,
  type HubCredentials,
  hubKubeconfigSecretData,
} from '../../../src/registration/agent/hub-kubeconfig-secret.ts';
import type { Secret } from '../../../src/registration/agent/kinds.ts';
import { agentSubject } from '../../../src/tunnel/identity.ts';

const identity = { clusterName: 'cluster-a', agentName: 'agent-1' };
let ca: CertificateAuthority;
let hub: HubEndpoint;
let creds: HubCredentials;
const noEnv = {};

const b64 = (s: string) => Buffer.from(s).toString('base64');
const secretOf = (data: Record<string, string>): Secret => ({
  metadata: { name: 'hub-kubeconfig-secret' },
  data,
});

async function agentCert(validitySeconds = 3600, cluster = identity.clusterName) {
  return issueCertificate(ca, {
    ...agentSubject(cluster, identity.agentName),
    usage: 'client',
    validitySeconds,
  });
}

beforeAll(async () => {
  ca = await createCertificateAuthority('hub-ca');
  hub = {
    server: 'https://hub.example.com:6443',
    caPem: ca.certPem,
    proxyUrl: 'http://squid.example.com:3128',
  };
  const { certPem, keyPem } = await agentCert();
  creds = credentialsFromCertificate(hub, certPem, keyPem, identity, noEnv);
});

describe('hub kubeconfig secret', () => {
  it('holds OCM’s keys; its kubeconfig is OCM’s (default-cluster/default-auth/default-context, tls.crt/tls.key files) and keeps proxy-url', () => {
    const data = hubKubeconfigSecretData(creds, identity);
    expect(Object.keys(data).sort()).toEqual(Object.values(HubKubeconfigSecretKey).sort());
    const yaml = Buffer.from(data.kubeconfig!, 'base64').toString();
    const kc = new KubeConfig();
    kc.loadFromString(yaml);
    expect(kc.getCurrentContext()).toBe('default-context');
    expect(kc.getContextObject('default-context')).toMatchObject({
      cluster: 'default-cluster',
      user: 'default-auth',
    });
    expect(kc.getCurrentCluster()).toMatchObject({
      name: 'default-cluster',
      server: hub.server,
      proxyUrl: hub.proxyUrl,
    });
    expect(kc.getCurrentUser()).toMatchObject({
      name: 'default-auth',
      certFile: 'tls.crt',
      keyFile: 'tls.key',
    });
    expect(yaml).not.toContain('client-certificate-data');
    expect(yaml).not.toContain('client-key-data');
    expect(Buffer.from(data['cluster-name']!, 'base64').toString()).toBe('cluster-a');
    expect(Buffer.from(data['agent-name']!, 'base64').toString()).toBe('agent-1');
  });

  it('gives tether’s own agents a kubeconfig with the secret’s certificate and key in memory (no mount)', () => {
    const user = creds.kubeconfig.getCurrentUser();
    expect(Buffer.from(user?.certData ?? '', 'base64').toString()).toBe(creds.certPem);
    expect(Buffer.from(user?.keyData ?? '', 'base64').toString()).toBe(creds.keyPem);
    expect(user?.certFile).toBeFalsy();
    const reused = credentialsFromSecret(
      secretOf(hubKubeconfigSecretData(creds, identity)),
      identity,
      hub,
      noEnv,
    );
    const reusedUser = (reused as HubCredentials).kubeconfig.getCurrentUser();
    expect(Buffer.from(reusedUser?.keyData ?? '', 'base64').toString()).toBe(creds.keyPem);
  });

  it('reuses a secret written by the previous tether layout (certificate embedded, names "hub")', () => {
    const previous = kubeconfigFromParts({
      name: 'hub',
      server: hub.server,
      caPem: ca.certPem,
      certPem: creds.certPem,
      keyPem: creds.keyPem,
      proxyUrl: hub.proxyUrl,
    });
    const data = { ...hubKubeconfigSecretData(creds, identity), kubeconfig: b64(kubeconfigToYaml(previous)) };
    const reused = credentialsFromSecret(secretOf(data), identity, hub, noEnv) as HubCredentials;
    expect(typeof reused).toBe('object');
    expect(reused.serial).toBe(creds.serial);
    expect(reused.hub).toEqual(hub);
  });

  it('is reused when names, certificate, key and hub all match', () => {
    const reused = credentialsFromSecret(
      secretOf(hubKubeconfigSecretData(creds, identity)),
      identity,
      hub,
      noEnv,
    );
    expect(typeof reused).toBe('object');
    expect((reused as HubCredentials).serial).toBe(creds.serial);
    expect((reused as HubCredentials).hub).toEqual(hub);
  });

  it('is not reused for another cluster, an expired certificate, a foreign key or another hub', async () => {
    const data = hubKubeconfigSecretData(creds, identity);
    const other = { ...identity, clusterName: 'cluster-b' };
    expect(credentialsFromSecret(secretOf(data), other, hub, noEnv)).toMatch(/for cluster "cluster-a"/);

    const expired = await agentCert(-10);
    const withExpired = { ...data, 'tls.crt': b64(expired.certPem), 'tls.key': b64(expired.keyPem) };
    expect(credentialsFromSecret(secretOf(withExpired), identity, hub, noEnv)).toMatch(/expired/);

    const stranger = await agentCert();
    const mismatched = { ...data, 'tls.key': b64(stranger.keyPem) };
    expect(credentialsFromSecret(secretOf(mismatched), identity, hub, noEnv)).toMatch(/does not belong/);

    const wrongCn = await agentCert(3600, 'cluster-z');
    const foreign = { ...data, 'tls.crt': b64(wrongCn.certPem), 'tls.key': b64(wrongCn.keyPem) };
    expect(credentialsFromSecret(secretOf(foreign), identity, hub, noEnv)).toMatch(/certificate is for/);

    const movedHub = { ...hub, server: 'https://other-hub.example.com:6443' };
    expect(credentialsFromSecret(secretOf(data), identity, movedHub, noEnv)).toMatch(
      /names https:\/\/other-hub/,
    );

    const { kubeconfig: _drop, ...partial } = data;
    expect(credentialsFromSecret(secretOf(partial), identity, hub, noEnv)).toMatch(/"kubeconfig" is missing/);
  });

  it('reuses OCM’s own secret, whose kubeconfig points at tls.crt/tls.key files', () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [
        { name: 'default-cluster', server: hub.server, caData: b64(ca.certPem), skipTLSVerify: false },
      ],
      users: [
        {
          name: 'default-auth',
          certFile: '/spoke/hub-kubeconfig/tls.crt',
          keyFile: '/spoke/hub-kubeconfig/tls.key',
        },
      ],
      contexts: [{ name: 'default-context', cluster: 'default-cluster', user: 'default-auth' }],
      currentContext: 'default-context',
    });
    const data = { ...hubKubeconfigSecretData(creds, identity), kubeconfig: b64(kubeconfigToYaml(kc)) };
    const reused = credentialsFromSecret(secretOf(data), identity, undefined, noEnv) as HubCredentials;
    expect(typeof reused).toBe('object');
    const user = reused.kubeconfig.getCurrentUser();
    expect(user?.certFile).toBeFalsy();
    expect(Buffer.from(user?.keyData ?? '', 'base64').toString()).toBe(creds.keyPem);
  });
});
