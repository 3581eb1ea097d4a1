// Addon registration end to end on real control planes: the registration hub and a real
// registration agent joined through squid (test/registration/e2e-joined-cluster.ts), and the hub
// end of one addon's registration (startAddonRegistrationController). A ManagedClusterAddOn gets
// OCM's default registration and a Role in its cluster namespace; the agent asks for the addon's
// certificate with the cluster's identity; the hub approves it; the agent writes
// `<addon>-hub-kubeconfig` into the install namespace; that kubeconfig authenticates as the addon
// user and may do what the addon asked for in its cluster namespace and nothing outside it. The
// certificate is short-lived (600 s); the rotation test restarts the agent with a rotation point a
// few seconds away (as a fraction of the lifetime left, as registration-agent-credentials does), so
// renewal is seen within the test; deleting the addon removes the secret and (by owner) the hub RBAC.
// A second addon with a custom signer gets its certificate from the addon's own `sign`, in OCM's
// `<addon>-<signer>-client-cert` secret, removed when the addon withdraws the registration.
import { X509Certificate } from 'node:crypto';
import { AuthenticationV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAddonRegistrationController } from '../../src/addon/hub/registration/index.ts';
import type { AgentAddon } from '../../src/addon/sdk/types.ts';
import {
  addonAgentUser,
  addonClusterGroup,
  defaultAddonAgentName,
} from '../../src/api/addon-registration.ts';
import { type ManagedClusterAddOn, managedClusterAddOnResource } from '../../src/api/index.ts';
import { findCondition, isForbidden, ResourceClient } from '../../src/kube/index.ts';
import { createCertificateAuthority, signCertificateRequest } from '../../src/pki/index.ts';
import { type RegistrationAgent, startRegistrationAgent } from '../../src/registration/agent/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { adminKubeConfig, configMapResource, uniqueName } from './fixtures/helpers.ts';
import { env, hubKc, type JoinedCluster, joinedCluster } from './fixtures/joined-cluster.ts';

const secretResource = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true };
const namespaceResource = {
  group: '',
  version: 'v1',
  plural: 'namespaces',
  kind: 'Namespace',
  namespaced: false,
};
const roleResource = {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  plural: 'roles',
  kind: 'Role',
  namespaced: true,
};
const managed = adminKubeConfig(env.cluster1);
const managedSecrets = new ResourceClient<{ data?: Record<string, string> } & { metadata: object }>(
  managed,
  secretResource,
);
const addons = new ResourceClient<ManagedClusterAddOn>(hubKc, managedClusterAddOnResource);
const roles = new ResourceClient(hubKc, roleResource);
const hubCsrs = new ResourceClient(hubKc, {
  group: 'certificates.k8s.io',
  version: 'v1',
  plural: 'certificatesigningrequests',
  kind: 'CertificateSigningRequest',
  namespaced: false,
});

const addonName = uniqueName('e2e-addon');
const installNamespace = uniqueName('addon-install');
const secretName = `${addonName}-hub-kubeconfig`;
const addon: AgentAddon = {
  name: addonName,
  manifests: () => [],
  registration: {
    hubPermissions: () => [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'create'] }],
  },
};

// A second addon with a custom signer (as cluster-proxy has), whose registration can be withdrawn.
const customSigner = 'e2e.tether.dev/addon-signer';
const signerAddonName = uniqueName('e2e-signed');
let signerRegistered = true;
const signerCa = createCertificateAuthority('e2e addon signer');
const signerAddon: AgentAddon = {
  name: signerAddonName,
  manifests: () => [],
  registration: {
    configs: () =>
      signerRegistered
        ? [{ signerName: customSigner, subject: { user: 'e2e-agent', groups: ['e2e-group'] } }]
        : [],
    sign: async (csr) =>
      signCertificateRequest(await signerCa, Buffer.from(csr.spec.request, 'base64').toString('utf8'), {
        usage: 'client',
      }),
  },
};

let joined: JoinedCluster;
let agent: RegistrationAgent | undefined;
let controller: { stop(): Promise<void> } | undefined;
let signerController: { stop(): Promise<void> } | undefined;

/** (Re)start the registration agent; addon certificates live 600 s and renew at `rotationFraction`. */
async function startAgent(rotationFraction?: number): Promise<RegistrationAgent> {
  await agent?.stop();
  agent = await startRegistrationAgent({
    clusterName: joined.name,
    agentName: 'agent',
    managedKubeConfig: managed,
    bootstrapKubeconfigPath: joined.bootstrapKubeconfigPath,
    agentNamespace: joined.agentNamespace,
    statusIntervalSeconds: 1,
    addonRegistration: { csrExpirationSeconds: 600, rotationFraction },
  });
  await agent.joined(90_000);
  return agent;
}

beforeAll(async () => {
  joined = await joinedCluster('addreg', 60);
  controller = startAddonRegistrationController({ hubKubeConfig: hubKc, addon, resyncPeriodMs: 60_000 });
  signerController = startAddonRegistrationController({ hubKubeConfig: hubKc, addon: signerAddon });
  await startAgent();
  // What the addon's ManifestWork would do: its install namespace exists on the managed cluster.
  await new ResourceClient(managed, namespaceResource).create({ metadata: { name: installNamespace } });
  await addons.create({
    metadata: { name: addonName, namespace: joined.name },
    spec: { installNamespace },
  });
}, 150_000);

afterAll(async () => {
  await controller?.stop();
  await signerController?.stop();
  await agent?.stop();
  await new ResourceClient(managed, namespaceResource)
    .delete(installNamespace, undefined, { ignoreNotFound: true })
    .catch(() => {});
  await joined?.cleanup();
});

/** The addon's kubeconfig as its agent would mount it: the secret's kubeconfig with tls.crt/tls.key. */
function addonKubeconfig(data: Record<string, string>): KubeConfig {
  const text = (key: string) => Buffer.from(data[key] ?? '', 'base64').toString('utf8');
  const kc = new KubeConfig();
  kc.loadFromString(text('kubeconfig'));
  kc.users = kc.users.map((u) => ({
    ...u,
    certFile: '',
    keyFile: '',
    certData: data['tls.crt'],
    keyData: data['tls.key'],
  }));
  expect(text('cluster-name')).toBe(joined.name);
  expect(text('agent-name')).toBe('agent');
  return kc;
}

async function issuedSecret(notSerial?: string) {
  return pollUntil(
    async () => {
      const s = await managedSecrets.get(secretName, installNamespace);
      if (!s?.data?.['tls.crt']) return undefined;
      const cert = new X509Certificate(Buffer.from(s.data['tls.crt'], 'base64'));
      return cert.serialNumber !== notSerial ? { data: s.data, cert } : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250, description: `secret ${installNamespace}/${secretName}` },
  );
}

describe('addon registration', () => {
  it('publishes the default registration, a Role in the cluster namespace and RegistrationApplied', async () => {
    const mca = await pollUntil(
      async () => {
        const m = await addons.get(addonName, joined.name);
        return findCondition(m?.status?.conditions, 'RegistrationApplied')?.status === 'True' ? m : undefined;
      },
      { timeoutMs: 30_000, description: 'RegistrationApplied True' },
    );
    expect(findCondition(mca.status?.conditions, 'RegistrationApplied')?.reason).toBe('SetPermissionApplied');
    expect(mca.status?.registrations).toEqual([
      {
        signerName: 'kubernetes.io/kube-apiserver-client',
        subject: {
          user: addonAgentUser(joined.name, addonName, defaultAddonAgentName),
          groups: [
            addonClusterGroup(joined.name, addonName),
            `system:open-cluster-management:addon:${addonName}`,
            'system:authenticated',
          ],
        },
      },
    ]);
    const role = await roles.get(`open-cluster-management:${addonName}:agent`, joined.name);
    expect(role?.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'ManagedClusterAddOn',
      uid: mca.metadata.uid,
    });
  });

  it('the agent gets a certificate through a CSR; the secret’s kubeconfig authenticates as the addon user', async () => {
    const { data } = await issuedSecret();
    expect(Object.keys(data).sort()).toEqual([
      'agent-name',
      'cluster-name',
      'kubeconfig',
      'tls.crt',
      'tls.key',
    ]);
    const kc = addonKubeconfig(data);
    expect(kc.getCurrentCluster()?.server).toBe(env.hub.apiserverUrl);
    expect(kc.getCurrentCluster()?.proxyUrl).toBe(env.tunnel.squidUrl); // as the agent's own hub kubeconfig
    const review = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    expect(review.status?.userInfo?.username).toBe(
      addonAgentUser(joined.name, addonName, defaultAddonAgentName),
    );
    expect(review.status?.userInfo?.groups).toContain(addonClusterGroup(joined.name, addonName));
    // Its hubPermissions, in its cluster namespace.
    const configMaps = new ResourceClient(kc, configMapResource);
    await configMaps.create({
      metadata: { name: 'from-addon', namespace: joined.name },
      data: { a: 'b' },
    } as never);
    expect((await configMaps.list({ namespace: joined.name })).items.length).toBeGreaterThan(0);
  });

  it('an addon identity is refused outside its cluster namespace and beyond its hubPermissions', async () => {
    const kc = addonKubeconfig((await issuedSecret()).data);
    const refused = async (what: Promise<unknown>) => {
      const err = await what.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isForbidden(err), String(err)).toBe(true);
    };
    await refused(new ResourceClient(kc, configMapResource).list({ namespace: 'default' }));
    await refused(new ResourceClient(kc, secretResource).list({ namespace: joined.name }));
    await refused(
      new ResourceClient(kc, configMapResource).create({
        metadata: { name: 'x', namespace: joined.agentNamespace },
      } as never),
    );
  });

  it('renews the certificate before it expires and rewrites the secret; ClusterCertificateRotated is reported', async () => {
    const first = await issuedSecret();
    // Until then the stored certificate serves: one CSR so far, not one per look.
    const csrs = await hubCsrs.list({ labelSelector: `open-cluster-management.io/addon-name=${addonName}` });
    expect(csrs.items.map((c) => c.metadata?.name)).toHaveLength(1);
    expect(csrs.items[0]?.metadata?.name).toMatch(new RegExp(`^addon-${joined.name}-${addonName}-`));
    const notBefore = new Date(first.cert.validFrom).getTime();
    const notAfter = new Date(first.cert.validTo).getTime();
    expect(notAfter - Date.now()).toBeLessThanOrEqual(600_000); // the signer honoured expirationSeconds
    // Restarted, the agent keeps the stored certificate until its rotation point, ~8 s from now.
    await startAgent((notAfter - (Date.now() + 8000)) / (notAfter - notBefore));
    const second = await issuedSecret(first.cert.serialNumber);
    expect(new Date(second.cert.validTo).getTime()).toBeGreaterThan(new Date(first.cert.validTo).getTime());
    expect(new Date(first.cert.validTo).getTime()).toBeGreaterThan(Date.now()); // renewed before expiry
    const mca = await addons.get(addonName, joined.name);
    const rotated = findCondition(mca?.status?.conditions, 'ClusterCertificateRotated');
    expect(rotated?.reason).toBe('ClientCertificateUpdated');
    // The renewed kubeconfig works too.
    const review = await addonKubeconfig(second.data)
      .makeApiClient(AuthenticationV1Api)
      .createSelfSubjectReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      });
    expect(review.status?.userInfo?.username).toBe(
      addonAgentUser(joined.name, addonName, defaultAddonAgentName),
    );
  }, 90_000);

  it('the registration agent also reports the addon’s Lease health (no lease yet: Available Unknown)', async () => {
    const available = await pollUntil(
      async () => findCondition((await addons.get(addonName, joined.name))?.status?.conditions, 'Available'),
      { timeoutMs: 30_000, description: 'Available set by the registration agent' },
    );
    expect(available).toMatchObject({ status: 'Unknown', reason: 'ManagedClusterAddOnLeaseNotFound' });
  });

  it('a custom signer’s certificate lands in <addon>-<signer>-client-cert, which goes when the registration does', async () => {
    await addons.create({
      metadata: { name: signerAddonName, namespace: joined.name },
      spec: { installNamespace },
    });
    const name = `${signerAddonName}-e2e.tether.dev-addon-signer-client-cert`;
    const secret = await pollUntil(async () => managedSecrets.get(name, installNamespace), {
      timeoutMs: 30_000,
      description: `secret ${name}`,
    });
    expect(Object.keys(secret.data ?? {}).sort()).toEqual([
      'agent-name',
      'cluster-name',
      'tls.crt',
      'tls.key',
    ]);
    const cert = new X509Certificate(Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64'));
    expect(cert.subject).toContain('CN=e2e-agent');
    expect(cert.checkIssued(new X509Certificate((await signerCa).certPem))).toBe(true);
    // The addon withdraws the registration; the next look at the addon publishes none.
    signerRegistered = false;
    await addons.patchMerge(
      signerAddonName,
      { metadata: { annotations: { 'e2e.tether.dev/touch': '1' } } },
      joined.name,
    );
    await pollUntil(async () => !(await managedSecrets.get(name, installNamespace)), {
      timeoutMs: 30_000,
      description: `secret ${name} deleted with its registration`,
    });
  });

  it('deleting the ManagedClusterAddOn removes the secret and the addon’s hub Role', async () => {
    await issuedSecret();
    await addons.delete(addonName, joined.name);
    await pollUntil(async () => !(await managedSecrets.get(secretName, installNamespace)), {
      timeoutMs: 30_000,
      description: 'the addon hub-kubeconfig secret deleted',
    });
    await pollUntil(
      async () => !(await roles.get(`open-cluster-management:${addonName}:agent`, joined.name)),
      {
        timeoutMs: 30_000,
        description: 'the addon Role garbage-collected with its ManagedClusterAddOn',
      },
    );
  }, 60_000);
});
