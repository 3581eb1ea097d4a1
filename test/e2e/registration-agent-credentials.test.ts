// The registration agent's hub credential over its life: certificate rotation with the current
// identity (a short-lived KCM-signed certificate), recovery when hub-kubeconfig-secret is deleted
// or replaced by one it cannot use, and joining through an https:// squid. The hub is played by
// the test (test/registration/agent/fake-hub.ts); cluster1 is the managed cluster.
import { X509Certificate } from 'node:crypto';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import {
  hubKubeconfigSecretName,
  type ManagedCluster,
  ManagedClusterCondition,
  managedClusterResource,
} from '../../src/api/index.ts';
import {
  closeCachedDispatchers,
  findCondition,
  type KubeObject,
  ResourceClient,
} from '../../src/kube/index.ts';
import { startSquid } from '../../src/localenv/squid.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/index.ts';
import { goTimeString } from '../../src/registration/agent/certificate-reporting.ts';
import { type Secret, secretResource } from '../../src/registration/agent/kinds.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { type AgentFixture, agentFixture } from './fixtures/registration-agent.ts';

const env = testEnv();

interface HubEvent extends KubeObject {
  reason?: string;
  note?: string;
  reportingController?: string;
  regarding?: { kind?: string; name?: string };
}
const eventsResource = {
  group: 'events.k8s.io',
  version: 'v1',
  plural: 'events',
  kind: 'Event',
  namespaced: true,
};
const hubPort = new URL(env.hub.apiserverUrl).port;
let fx: AgentFixture | undefined;
const cleanups: Array<() => unknown> = [];

async function fixture(prefix: string): Promise<AgentFixture> {
  fx = await agentFixture(env, prefix);
  return fx;
}

afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
  for (const step of cleanups.splice(0).reverse()) await step();
});

const serialOf = (f: AgentFixture, secret: Secret | undefined): string | undefined =>
  secret?.data?.['tls.crt'] ? new X509Certificate(f.secretValue(secret, 'tls.crt')).serialNumber : undefined;

/** The secret once its certificate serial differs from `serial` (and it is for this cluster). */
function waitForNewSecret(f: AgentFixture, serial: string | undefined, timeoutMs = 40_000) {
  return pollUntil(
    async () => {
      const secret = await f.hubSecret();
      const next = serialOf(f, secret);
      const mine = f.secretValue(secret, 'cluster-name') === f.clusterName;
      return next && next !== serial && mine ? { secret, serial: next } : undefined;
    },
    {
      timeoutMs,
      intervalMs: 200,
      description: `a hub-kubeconfig-secret with a certificate other than ${serial}`,
    },
  );
}

/** An https:// squid serving a certificate of a CA of its own (stopped by the file's cleanups). */
async function httpsSquid(caName: string) {
  const proxyCa = await createCertificateAuthority(caName);
  const serving = await issueCertificate(proxyCa, {
    commonName: '127.0.0.1',
    usage: 'server',
    ipAddresses: ['127.0.0.1'],
  });
  const squid = await startSquid({ tls: serving });
  cleanups.push(() => squid.stop());
  return { proxyCa, squid };
}

/** Mark Available Unknown as the hub's lease watchdog would, and wait for the agent to report True again. */
async function agentStillReports(f: AgentFixture): Promise<void> {
  const before = await f.cluster();
  await f.hub.markUnknown(f.clusterName);
  await pollUntil(
    async () => {
      const mc = await f.cluster();
      const available = findCondition(mc?.status?.conditions, ManagedClusterCondition.Available);
      return (
        available?.status === 'True' && mc?.metadata.resourceVersion !== before?.metadata.resourceVersion
      );
    },
    { timeoutMs: 20_000, description: 'the agent to report Available True again' },
  );
}

describe('registration agent hub credential', () => {
  it('renews a short-lived certificate with its current identity; the new secret has a new serial and the agent keeps working', async () => {
    const f = await fixture('reg-rotate');
    await f.writeBootstrapSecret();
    const first = await f.start({ csrExpirationSeconds: 600 });
    await f.acceptWhenCreated();
    await first.joined(60_000);
    const stored = await f.hubSecret();
    const serial = serialOf(f, stored);
    const cert = new X509Certificate(f.secretValue(stored, 'tls.crt'));
    const notBefore = new Date(cert.validFrom).getTime();
    const notAfter = new Date(cert.validTo).getTime();
    expect(notAfter - Date.now()).toBeLessThanOrEqual(600_000); // the signer honoured expirationSeconds
    await first.stop();

    // Restart with a rotation point about 8 s away, expressed as the fraction of lifetime left.
    const fraction = (notAfter - (Date.now() + 8000)) / (notAfter - notBefore);
    const changed: KubeConfig[] = [];
    const agent = await f.start({
      csrExpirationSeconds: 600,
      rotationFraction: fraction,
      onHubKubeconfigChanged: (kc) => changed.push(kc),
    });
    await agent.joined(30_000);
    expect(agent.certificateSerial()).toBe(serial); // reused after the restart, not bootstrapped

    const rotated = await waitForNewSecret(f, serial);
    const csrs = await f.hub.csrs(f.clusterName);
    expect(csrs.length).toBeGreaterThanOrEqual(2);
    // made with the hub-kubeconfig credential, so the hub sees a renewal by the agent itself
    expect(csrs[1]?.spec.username).toBe(`system:open-cluster-management:${f.clusterName}:e2e-agent`);
    await pollUntil(() => changed.length >= 2 && agent.certificateSerial() !== serial, {
      timeoutMs: 10_000,
      description: 'the agent to switch to the renewed certificate',
    });
    expect(rotated.serial).not.toBe(serial);
    const renewed = new ResourceClient<ManagedCluster>(changed.at(-1)!, managedClusterResource);
    expect((await renewed.get(f.clusterName))?.metadata.name).toBe(f.clusterName);

    // OCM's condition on the ManagedCluster, with the new certificate's validity.
    const newCert = new X509Certificate(f.secretValue(rotated.secret, 'tls.crt'));
    const rotatedCondition = await pollUntil(
      async () => {
        const c = findCondition((await f.cluster())?.status?.conditions, 'ClusterCertificateRotated');
        return c?.status === 'True' ? c : undefined;
      },
      { timeoutMs: 10_000, description: 'ClusterCertificateRotated True' },
    );
    expect(rotatedCondition.reason).toBe('ClientCertificateUpdated');
    expect(rotatedCondition.message).toBe(
      `client certificate rotated starting from ${goTimeString(new Date(newCert.validFrom))} to ${goTimeString(new Date(newCert.validTo))}`,
    );
    // Events in the cluster namespace on the hub, about the ManagedCluster, as klusterlet-agent.
    const events = await pollUntil(
      async () => {
        const list = await new ResourceClient<HubEvent>(f.hub.admin, eventsResource).list({
          namespace: f.clusterName,
        });
        const reasons = list.items.map((e) => e.reason);
        return reasons.includes('CertificateRotationStarted') && reasons.includes('ClientCertificateCreated')
          ? list.items
          : undefined;
      },
      { timeoutMs: 10_000, description: 'CertificateRotationStarted and ClientCertificateCreated events' },
    );
    for (const e of events) {
      expect(e.reportingController).toBe('klusterlet-agent');
      expect(e.regarding).toMatchObject({ kind: 'ManagedCluster', name: f.clusterName });
    }
    expect(events.find((e) => e.reason === 'ClientCertificateCreated')?.note).toMatch(
      /^A new client certificate for (Register|Bootstrap)Controller@cluster:.* is available$/,
    );
    await agentStillReports(f);
    // The status reconciler's own writes leave the condition alone.
    expect(findCondition((await f.cluster())?.status?.conditions, 'ClusterCertificateRotated')?.status).toBe(
      'True',
    );
  });

  it('a certificate issued before the hub accepts the cluster is reported (ClientCertificateCreated) once it is accepted', async () => {
    const f = await fixture('reg-heldevt');
    await f.writeBootstrapSecret();
    const agent = await f.start();
    // Approved at once, not accepted: no cluster namespace yet, no right to write events in it.
    await agent.waitForHubKubeConfig(30_000);
    await f.acceptWhenCreated();
    await agent.joined(30_000);
    const events = new ResourceClient<HubEvent>(f.hub.admin, eventsResource);
    const created = await pollUntil(
      async () =>
        (await events.list({ namespace: f.clusterName })).items.find(
          (e) => e.reason === 'ClientCertificateCreated',
        ),
      { timeoutMs: 10_000, description: 'the ClientCertificateCreated event held until acceptance' },
    );
    expect(created.note).toBe(
      `A new client certificate for BootstrapController@cluster:${f.clusterName} is available`,
    );
    expect(created.reportingController).toBe('klusterlet-agent');
  });

  it('bootstraps again when hub-kubeconfig-secret is deleted, or replaced by one for another cluster', async () => {
    const f = await fixture('reg-recover');
    const secrets = new ResourceClient<Secret>(f.managed, secretResource);
    await f.writeBootstrapSecret();
    const changed: KubeConfig[] = [];
    const agent = await f.start({ onHubKubeconfigChanged: (kc) => changed.push(kc) });
    await f.acceptWhenCreated();
    await agent.joined(60_000);
    const serial = serialOf(f, await f.hubSecret());

    await secrets.delete(hubKubeconfigSecretName, f.namespace);
    const second = await waitForNewSecret(f, serial);
    const csrs = await f.hub.csrs(f.clusterName);
    expect(csrs).toHaveLength(2);
    expect(csrs[1]?.spec.username).toBe(f.bootstrapUser); // a new join, not a renewal
    await pollUntil(() => agent.certificateSerial() === second.serial, {
      timeoutMs: 10_000,
      description: 'the agent to use the re-bootstrapped certificate',
    });

    const foreign = Buffer.from('some-other-cluster').toString('base64');
    await secrets.patchMerge(hubKubeconfigSecretName, { data: { 'cluster-name': foreign } }, f.namespace);
    const third = await waitForNewSecret(f, second.serial);
    expect(f.secretValue(third.secret, 'cluster-name')).toBe(f.clusterName);
    expect(await f.hub.csrs(f.clusterName)).toHaveLength(3);
    await pollUntil(() => changed.length === 3, { timeoutMs: 10_000, description: 'three hub kubeconfigs' });
    await agentStillReports(f);
  });

  it('joins through an https:// squid once the proxy’s CA is in Node’s default trust store', async () => {
    const f = await fixture('reg-https');
    const { proxyCa, squid } = await httpsSquid('e2e-https-proxy-ca');
    expect(squid.url).toMatch(/^https:\/\//);
    await f.writeBootstrapSecret(squid.url);
    const agent = await f.start();

    // client-node hands undici's ProxyAgent no TLS options for the proxy hop (only for the hub):
    // the proxy's certificate is checked against Node's default CAs, so nothing gets through yet.
    await new Promise((r) => setTimeout(r, 3000));
    expect(await f.cluster()).toBeUndefined();

    const defaults = getCACertificates('default');
    setDefaultCACertificates([...defaults, proxyCa.certPem]);
    cleanups.push(() => setDefaultCACertificates(defaults));
    // dispatchers read the default CAs when they are built (a process sets them at start): new
    // requests get new ones; the old ones close once their requests (watches among them) end
    void closeCachedDispatchers();
    await f.acceptWhenCreated();
    await agent.joined(60_000);
    await agent.stop();
    await pollUntil(() => squid.accessLog().includes(` CONNECT 127.0.0.1:${hubPort} `), {
      timeoutMs: 30_000,
      description: 'the https squid to log a CONNECT to the hub apiserver',
    });
  });

  it('joins through an https:// squid whose CA is appended to the bootstrap kubeconfig’s certificate-authority-data (clusteradm join --proxy-ca-file)', async () => {
    const f = await fixture('reg-https-ca');
    const { proxyCa, squid } = await httpsSquid('e2e-https-proxy-ca-in-kubeconfig');
    await f.writeBootstrapSecret(squid.url, proxyCa.certPem);
    const agent = await f.start();
    await f.acceptWhenCreated();
    await agent.joined(60_000);
    // the hub kubeconfig it wrote keeps the way out: the same proxy, the same CA bundle
    const hubKubeconfig = f.secretValue(await f.hubSecret(), 'kubeconfig');
    expect(hubKubeconfig).toContain(`proxy-url: ${squid.url}`);
    await agentStillReports(f);
    await agent.stop();
    await pollUntil(() => squid.accessLog().includes(` CONNECT 127.0.0.1:${hubPort} `), {
      timeoutMs: 30_000,
      description: 'the https squid to log a CONNECT to the hub apiserver',
    });
  });
});
