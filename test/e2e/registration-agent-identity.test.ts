// The registration agent's identity as OCM keeps it: a generated agent name stored in
// hub-kubeconfig-secret, so an agent started again elsewhere (no name given, another host or pod)
// reuses its certificate instead of asking for a new one; and never more than 10 of the cluster's
// CSRs pending on the hub (a rotation it halts says so on the ManagedCluster). The hub is played
// by the test (test/registration/agent/fake-hub.ts); cluster1 is the managed cluster.
import { X509Certificate } from 'node:crypto';
import { Writable } from 'node:stream';
import { CertificatesV1Api } from '@kubernetes/client-node';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterNameLabel } from '../../src/api/index.ts';
import { findCondition, type KubeObject, ResourceClient } from '../../src/kube/index.ts';
import { createCertificateRequest } from '../../src/pki/index.ts';
import { csrCreationHaltedMessage, maxPendingClusterCsrs } from '../../src/registration/agent/csr.ts';
import {
  agentNameAlphabet,
  CertificateEventReason,
  CertificateRotationReason,
  ClusterCertificateRotatedCondition,
} from '../../src/registration/agent/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { type AgentFixture, agentFixture } from './fixtures/registration-agent.ts';

const env = testEnv();
let fx: AgentFixture | undefined;

afterEach(async () => {
  await fx?.cleanup();
  fx = undefined;
});

/** A logger whose messages the test can read. */
function capturedLogger() {
  const messages: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      messages.push(String(chunk));
      done();
    },
  });
  return { log: pino({ level: 'info' }, sink), messages };
}

/** maxPendingClusterCsrs pending CSRs labelled for the fixture's cluster; returns their names. */
async function fillPendingCsrs(f: AgentFixture): Promise<string[]> {
  const certs = f.hub.admin.makeApiClient(CertificatesV1Api);
  const fillers: string[] = [];
  for (let i = 0; i < maxPendingClusterCsrs; i++) {
    const { csrPem } = await createCertificateRequest({ commonName: `filler-${i}` });
    const name = `${f.clusterName}-filler-${i}`;
    await certs.createCertificateSigningRequest({
      body: {
        metadata: { name, labels: { [clusterNameLabel]: f.clusterName } },
        spec: {
          request: Buffer.from(csrPem).toString('base64'),
          signerName: 'kubernetes.io/kube-apiserver-client',
          usages: ['digital signature', 'key encipherment', 'client auth'],
        },
      },
    });
    fillers.push(name);
  }
  return fillers;
}

interface HubEvent extends KubeObject {
  reason?: string;
  note?: string;
}

describe('registration agent identity', () => {
  it('generates its name once and keeps it in hub-kubeconfig-secret: started again without a name it reuses its certificate, no new CSR', async () => {
    fx = await agentFixture(env, 'reg-ident');
    const f = fx;
    await f.writeBootstrapSecret();
    const first = await f.start({ agentName: undefined });
    expect(first.agentName).toMatch(new RegExp(`^[${agentNameAlphabet}]{5}$`));
    await f.acceptWhenCreated();
    await first.joined(60_000);
    const secret = await f.hubSecret();
    expect(f.secretValue(secret, 'agent-name')).toBe(first.agentName);
    const serial = first.certificateSerial();
    const csrsBefore = (await f.hub.csrs(f.clusterName)).map((c) => c.metadata?.name);
    expect(csrsBefore).toHaveLength(1);
    await first.stop();

    // Another process (as on another host or pod: nothing host-specific is passed) takes over.
    const second = await f.start({ agentName: undefined });
    expect(second.agentName).toBe(first.agentName);
    await second.waitForHubKubeConfig(30_000);
    expect(second.certificateSerial()).toBe(serial);
    await second.joined(30_000);
    expect((await f.hub.csrs(f.clusterName)).map((c) => c.metadata?.name)).toEqual(csrsBefore);
    expect(f.secretValue(await f.hubSecret(), 'agent-name')).toBe(first.agentName);
  });

  it('creates no CSR while 10 of its cluster’s CSRs are pending on the hub, and one as soon as fewer are', async () => {
    // The fake hub approves nothing during this test.
    fx = await agentFixture(env, 'reg-csrcap', { approveAfterMs: 3_600_000 });
    const f = fx;
    const certs = f.hub.admin.makeApiClient(CertificatesV1Api);
    const fillers = await fillPendingCsrs(f);
    await f.writeBootstrapSecret();
    const { log, messages } = capturedLogger();
    await f.start({ log });
    await pollUntil(() => messages.some((m) => m.includes(csrCreationHaltedMessage)), {
      timeoutMs: 30_000,
      description: 'the agent to halt CSR creation',
    });
    const names = async () => (await f.hub.csrs(f.clusterName)).map((c) => c.metadata?.name ?? '');
    expect((await names()).sort()).toEqual([...fillers].sort());

    await certs.deleteCertificateSigningRequest({ name: fillers[0]! });
    const mine = await pollUntil(async () => (await names()).find((n) => !fillers.includes(n)), {
      timeoutMs: 30_000,
      description: 'the agent’s own CSR once 9 are pending',
    });
    expect(mine.startsWith(`${f.clusterName}-`)).toBe(true);
    expect(await names()).toHaveLength(maxPendingClusterCsrs);
  });

  it('a rotation halted by 10 pending CSRs sets ClusterCertificateRotated False and records ClientCertificateCreationHalted', async () => {
    fx = await agentFixture(env, 'reg-halt', { approveAfterMs: 3_600_000 });
    const f = fx;
    await f.writeBootstrapSecret();
    const first = await f.start({ csrExpirationSeconds: 600 });
    await f.acceptWhenCreated();
    await pollUntil(async () => (await f.hub.csrs(f.clusterName)).length === 1, {
      timeoutMs: 30_000,
      description: 'the bootstrap CSR',
    });
    await f.hub.approveNow(f.clusterName);
    await first.joined(60_000);
    const cert = new X509Certificate(f.secretValue(await f.hubSecret(), 'tls.crt'));
    const notBefore = new Date(cert.validFrom).getTime();
    const notAfter = new Date(cert.validTo).getTime();
    await first.stop();

    await fillPendingCsrs(f);
    // Started again with its rotation point about 3 s away.
    const fraction = (notAfter - (Date.now() + 3000)) / (notAfter - notBefore);
    const agent = await f.start({ csrExpirationSeconds: 600, rotationFraction: fraction });
    await agent.joined(30_000);
    const condition = await pollUntil(
      async () => {
        const c = findCondition((await f.cluster())?.status?.conditions, ClusterCertificateRotatedCondition);
        return c?.status === 'False' ? c : undefined;
      },
      { timeoutMs: 30_000, description: 'ClusterCertificateRotated False' },
    );
    expect(condition.reason).toBe(CertificateRotationReason.UpdateFailed);
    expect(condition.message).toBe(csrCreationHaltedMessage);
    const events = new ResourceClient<HubEvent>(f.hub.admin, {
      group: 'events.k8s.io',
      version: 'v1',
      plural: 'events',
      kind: 'Event',
      namespaced: true,
    });
    const reasons = await pollUntil(
      async () => {
        const list = await events.list({ namespace: f.clusterName });
        const all = list.items.map((e) => e.reason);
        return all.includes(CertificateEventReason.CreationHalted) ? all : undefined;
      },
      { timeoutMs: 10_000, description: 'a ClientCertificateCreationHalted event' },
    );
    expect(reasons).toContain(CertificateEventReason.RotationStarted);
    expect(agent.certificateSerial()).toBe(cert.serialNumber);
  });
});
