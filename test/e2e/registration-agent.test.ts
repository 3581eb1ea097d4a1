// The registration agent joins a real hub (hub and cluster1 control planes, KCM signing the CSR,
// a real squid between agent and hub). The test plays the hub's part (test/registration/agent/
// fake-hub.ts): bootstrap identity, CSR approval, accept with OCM's narrow agent RBAC, so the
// agent runs with exactly the permissions OCM grants it.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type KubeConfig, VersionApi } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import {
  HubKubeconfigSecretKey,
  type ManagedCluster,
  ManagedClusterCondition,
  managedClusterResource,
} from '../../src/api/index.ts';
import { findCondition, isForbidden, ResourceClient } from '../../src/kube/index.ts';
import { certificateInfo, certificateRequestSubject } from '../../src/pki/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { type AgentFixture, agentFixture } from './fixtures/registration-agent.ts';

const env = testEnv();
const hubPort = new URL(env.hub.apiserverUrl).port;
let fx: AgentFixture | undefined;
const tmpDirs: string[] = [];

async function fixture(prefix: string, options?: { approveAfterMs?: number }): Promise<AgentFixture> {
  fx = await agentFixture(env, prefix, options);
  return fx;
}

afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
  for (const dir of tmpDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** CONNECTs squid logged to the hub apiserver (squid writes the line when the tunnel closes). */
function hubConnects(): number {
  const log = readFileSync(env.tunnel.squidAccessLogPath, 'utf8');
  return log.split('\n').filter((line) => line.includes(` CONNECT 127.0.0.1:${hubPort} `)).length;
}

const available = (mc: ManagedCluster | undefined) =>
  findCondition(mc?.status?.conditions, ManagedClusterCondition.Available)?.status === 'True' &&
  mc?.status?.version?.kubernetes
    ? mc
    : undefined;

describe('registration agent joining a hub', () => {
  it('an agent behind squid joins: CSR signed, hub-kubeconfig-secret written, Joined and Available with version and capacity', async () => {
    const f = await fixture('reg-squid');
    const connectsBefore = hubConnects();
    await f.writeBootstrapSecret(env.tunnel.squidUrl);
    const changed: KubeConfig[] = [];
    const agent = await f.start({ onHubKubeconfigChanged: (kc) => changed.push(kc) });
    await f.acceptWhenCreated();
    await agent.joined(60_000);

    // The CSR: made with the bootstrap identity, for the agent's OCM subject.
    const [csr, ...more] = await f.hub.csrs(f.clusterName);
    expect(more).toEqual([]);
    expect(csr?.metadata?.name?.startsWith(`${f.clusterName}-`)).toBe(true);
    expect(csr?.spec).toMatchObject({
      signerName: 'kubernetes.io/kube-apiserver-client',
      usages: ['digital signature', 'key encipherment', 'client auth'],
      username: f.bootstrapUser,
    });
    const requested = certificateRequestSubject(Buffer.from(String(csr?.spec.request), 'base64').toString());
    expect(requested).toEqual({
      commonName: `system:open-cluster-management:${f.clusterName}:e2e-agent`,
      organizations: [
        `system:open-cluster-management:${f.clusterName}`,
        'system:open-cluster-management:managed-clusters',
      ],
    });

    // The secret: OCM's keys, OCM's kubeconfig for the hub through squid pointing at tls.crt/tls.key.
    const secret = await f.hubSecret();
    expect(Object.keys(secret?.data ?? {}).sort()).toEqual(Object.values(HubKubeconfigSecretKey).sort());
    expect(f.secretValue(secret, 'cluster-name')).toBe(f.clusterName);
    expect(f.secretValue(secret, 'agent-name')).toBe('e2e-agent');
    const cert = certificateInfo(f.secretValue(secret, 'tls.crt'));
    expect(cert.commonName).toBe(requested.commonName);
    expect(cert.organizations.sort()).toEqual([...requested.organizations].sort());
    const stored = f.secretValue(secret, 'kubeconfig');
    expect(stored).toContain(`server: ${env.hub.apiserverUrl}`);
    expect(stored).toContain(`proxy-url: ${env.tunnel.squidUrl}`);
    expect(stored).toContain('client-certificate: tls.crt');
    expect(stored).toContain('client-key: tls.key');
    expect(stored).toContain('current-context: default-context');

    // The ManagedCluster: client config of cluster1, conditions, version, capacity.
    const mc = await pollUntil(async () => available(await f.cluster()), {
      timeoutMs: 30_000,
      description: 'Available True with a version',
    });
    expect(mc.spec.managedClusterClientConfigs).toEqual([
      { url: env.cluster1.apiserverUrl, caBundle: readFileSync(env.cluster1.caCertPath).toString('base64') },
    ]);
    const conditions = mc.status?.conditions;
    expect(findCondition(conditions, ManagedClusterCondition.HubAccepted)?.status).toBe('True');
    expect(findCondition(conditions, ManagedClusterCondition.Joined)).toMatchObject({
      status: 'True',
      reason: 'ManagedClusterJoined',
    });
    expect(findCondition(conditions, ManagedClusterCondition.Available)).toMatchObject({
      status: 'True',
      reason: 'ManagedClusterAvailable',
    });
    const version = await f.managed.makeApiClient(VersionApi).getCode();
    expect(mc.status?.version?.kubernetes).toBe(version.gitVersion);
    expect(mc.status?.capacity).toHaveProperty('cpu');
    expect(mc.status?.allocatable).toHaveProperty('memory');

    // The agent's own identity is the narrow one: its cluster only.
    expect(changed).toHaveLength(1);
    const own = new ResourceClient<ManagedCluster>(changed[0]!, managedClusterResource);
    expect((await own.get(f.clusterName))?.metadata?.name).toBe(f.clusterName);
    const everything = await own.list().catch((err: unknown) => err);
    expect(isForbidden(everything)).toBe(true);

    await agent.stop();
    await pollUntil(() => hubConnects() > connectsBefore, {
      timeoutMs: 30_000,
      description: 'squid to log a CONNECT to the hub apiserver',
    });
  });

  it('joins directly from a bootstrap kubeconfig file; a restarted agent reuses its hub-kubeconfig-secret', async () => {
    const f = await fixture('reg-file');
    const dir = mkdtempSync(join(tmpdir(), 'reg-agent-'));
    tmpDirs.push(dir);
    const path = join(dir, 'bootstrap.kubeconfig');
    writeFileSync(path, await f.hub.bootstrapKubeconfig(), { mode: 0o600 });

    const first = await f.start({ bootstrapKubeconfigPath: path });
    await f.acceptWhenCreated();
    await first.joined(60_000);
    const serial = first.certificateSerial();
    expect(serial).toBeTruthy();
    expect(f.secretValue(await f.hubSecret(), 'kubeconfig')).not.toContain('proxy-url');
    await first.stop();

    const changed: KubeConfig[] = [];
    const second = await f.start({
      bootstrapKubeconfigPath: path,
      onHubKubeconfigChanged: (kc) => changed.push(kc),
    });
    await second.joined(30_000);
    expect(second.certificateSerial()).toBe(serial);
    expect(changed).toHaveLength(1);
    expect((await f.hub.csrs(f.clusterName)).length).toBe(1);
  });

  it('waits for a CSR approval that comes late (a human), then joins', async () => {
    const f = await fixture('reg-late', { approveAfterMs: 4000 });
    await f.writeBootstrapSecret();
    const agent = await f.start();
    await f.acceptWhenCreated();
    await pollUntil(async () => (await f.hub.csrs(f.clusterName)).length === 1, {
      timeoutMs: 20_000,
      description: 'the agent to create its CSR',
    });
    expect(agent.hubKubeConfig()).toBeUndefined();
    await agent.joined(60_000);
    expect(f.hub.approved).toHaveLength(1);
  });
});
