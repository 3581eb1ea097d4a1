// ManagedServiceAccount over time: the agent puts back a deleted or altered Secret (it re-reads each
// by name every tokenSecretCheckPeriodMs, and waits out a token Secret the hub does not grant yet),
// replaces a token the managed apiserver stopped accepting, rotates at the configured fraction of
// the real lifetime (old token still valid until it expires), and cleans up ServiceAccounts of deleted MSAs — also
// ones deleted while it was down — without ever touching a ServiceAccount that lacks its label.

import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isForbidden, ResourceClient } from '../../src/kube/index.ts';
import {
  type Role,
  type RoleBinding,
  roleBindingResource,
  roleResource,
  type Secret,
  secretResource,
  type TokenReview,
  tokenReviewResource,
} from '../../src/serviceaccount/core.ts';
import { decodeTokenClaims } from '../../src/serviceaccount/index.ts';
import { tokenSecretsRoleName } from '../../src/serviceaccount/rbac.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  createMsa,
  decode,
  env,
  hubAdmin,
  hubSecrets,
  isoSeconds,
  label,
  type MsaCluster,
  managedAdmin,
  managedServiceAccounts,
  msaCluster,
  msas,
  type RunningAgent,
  runCleanups,
  startAgent,
  tokenOf,
  waitForProjection,
  waitGone,
} from './fixtures/serviceaccount.ts';

const hubRoles = new ResourceClient<Role>(hubAdmin, roleResource);
const hubRoleBindings = new ResourceClient<RoleBinding>(hubAdmin, roleBindingResource);
const reviews = new ResourceClient<TokenReview>(managedAdmin, tokenReviewResource);
const authenticated = async (token: string) =>
  (await reviews.create({ metadata: {}, spec: { token } })).status?.authenticated === true;

let cluster: MsaCluster;
let agent: RunningAgent;

beforeAll(async () => {
  cluster = await msaCluster('msa-life');
  agent = await startAgent(cluster);
});
afterAll(runCleanups);

describe('ManagedServiceAccount lifecycle', () => {
  it('a deleted hub Secret is recreated promptly with a working token', async () => {
    const msa = await createMsa(cluster);
    const name = msa.metadata.name;
    const first = await waitForProjection(cluster, name);
    await hubSecrets.delete(name, cluster.name);
    const started = Date.now();
    const again = await waitForProjection(cluster, name, { notToken: first.token, timeoutMs: 10_000 });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(again.secret.metadata.uid).not.toBe(first.secret.metadata.uid);
    expect(await authenticated(again.token)).toBe(true);
  });

  it('someone changing ca.crt or the token gets a fresh token; their labels and annotations survive', async () => {
    const msa = await createMsa(cluster);
    const name = msa.metadata.name;
    const first = await waitForProjection(cluster, name);
    await hubSecrets.patchMerge(
      name,
      {
        metadata: { labels: { team: 'platform' }, annotations: { 'example.com/note': 'keep me' } },
        data: { 'ca.crt': Buffer.from('not a CA').toString('base64') },
      },
      cluster.name,
    );
    const second = await waitForProjection(cluster, name, { notToken: first.token });
    expect(decode(second.secret.data?.['ca.crt'])).toBe(readFileSync(env.cluster1.caCertPath, 'utf8'));
    expect(second.secret.metadata.labels).toMatchObject({ team: 'platform', [label]: 'true' });
    expect(second.secret.metadata.annotations?.['example.com/note']).toBe('keep me');

    // A token that is valid but not the one the agent wrote (here: the previous one) is replaced too.
    await hubSecrets.patchMerge(
      name,
      { data: { token: Buffer.from(first.token).toString('base64') } },
      cluster.name,
    );
    const third = await waitForProjection(cluster, name, { notToken: first.token });
    expect(third.token).not.toBe(second.token);
    expect(third.secret.metadata.labels?.team).toBe('platform');
  });

  it('a ServiceAccount deleted on cluster1 comes back and the token the apiserver now rejects is replaced', async () => {
    const msa = await createMsa(cluster);
    const name = msa.metadata.name;
    const first = await waitForProjection(cluster, name);
    const before = await managedServiceAccounts.get(name, agent.installNamespace);
    await managedServiceAccounts.delete(name, agent.installNamespace);
    const second = await waitForProjection(cluster, name, { notToken: first.token });
    const after = await managedServiceAccounts.get(name, agent.installNamespace);
    expect(after?.metadata.uid).not.toBe(before?.metadata.uid);
    expect(decodeTokenClaims(second.token)?.serviceAccountUid).toBe(after?.metadata.uid);
    expect(await authenticated(first.token)).toBe(false);
    expect(await authenticated(second.token)).toBe(true);
  });

  it('deleting the MSA removes its Secret (hub garbage collector) and its ServiceAccount on cluster1', async () => {
    const msa = await createMsa(cluster);
    const name = msa.metadata.name;
    await waitForProjection(cluster, name);
    await msas.delete(name, cluster.name);
    await waitGone('ServiceAccount', () => managedServiceAccounts.get(name, agent.installNamespace));
    // The hub KCM's garbage collector starts watching a new CRD's kind only at its next discovery
    // sync (every 30 s): right after the environment started that can take that long, later it is at once.
    await waitGone('token Secret', () => hubSecrets.get(name, cluster.name), 60_000);
  });

  it('after a restart, labelled ServiceAccounts whose MSA is gone are deleted; unlabelled ones are not', async () => {
    const other = await msaCluster('msa-restart');
    const first = await startAgent(other);
    const msa = await createMsa(other);
    const name = msa.metadata.name;
    await waitForProjection(other, name);
    await first.stop();
    await msas.delete(name, other.name);
    const bystander = await managedServiceAccounts.create({
      metadata: { name: `${name}-bystander`, namespace: first.installNamespace },
    });
    expect(await managedServiceAccounts.get(name, first.installNamespace)).toBeDefined();

    await startAgent(other, { installNamespace: first.installNamespace });
    await waitGone('orphaned ServiceAccount', () => managedServiceAccounts.get(name, first.installNamespace));
    const kept = await managedServiceAccounts.get(`${name}-bystander`, first.installNamespace);
    expect(kept?.metadata.uid).toBe(bystander.metadata.uid);
    expect(await managedServiceAccounts.get('default', first.installNamespace)).toBeDefined();
  });
});

describe('the token Secrets grant', () => {
  it('while the hub does not grant the token Secret (403) the agent retries, and projects once the grant is back', async () => {
    const late = await msaCluster('msa-grant');
    await startAgent(late);
    const msa = await createMsa(late);
    const name = msa.metadata.name;
    const first = await waitForProjection(late, name);
    // The hub controller grants again on any event of the MSA: let the agent's last status write of
    // the projection land first (a CI run saw one arrive after the grant was taken away, so the
    // grant came back and the agent rightly recreated the Secret).
    let last = '';
    let quietSince = Date.now();
    await pollUntil(
      async () => {
        const rv = (await msas.get(name, late.name))?.metadata.resourceVersion ?? '';
        if (rv !== last) {
          last = rv;
          quietSince = Date.now();
        }
        return Date.now() - quietSince >= 2_000;
      },
      { timeoutMs: 20_000, intervalMs: 250, description: `${name} unchanged for two seconds` },
    );
    // Take the grant away (as if the hub controller had not caught up) and the Secret with it.
    await hubRoleBindings.delete(tokenSecretsRoleName, late.name);
    await hubRoles.delete(tokenSecretsRoleName, late.name);
    const asAgent = new ResourceClient<Secret>(late.hubKubeConfig, secretResource);
    await pollUntil(
      async () => isForbidden(await asAgent.get(name, late.name).catch((err: unknown) => err)),
      {
        timeoutMs: 10_000,
        intervalMs: 100,
        description: 'the token Secret to be forbidden to the agent',
      },
    );
    await hubSecrets.delete(name, late.name);
    // For four of its 500 ms checks the agent cannot read the Secret: it neither recreates it over
    // someone's nor reports a failure on the MSA, it just retries.
    const seen = new Set<string>();
    const gapStart = Date.now();
    await pollUntil(
      async () => {
        const [m, secret] = await Promise.all([msas.get(name, late.name), hubSecrets.get(name, late.name)]);
        const reported = m?.status?.conditions?.find((c) => c.type === 'TokenReported')?.status;
        seen.add(`TokenReported=${reported} secret=${secret ? 'present' : 'absent'}`);
        return Date.now() - gapStart > 2_000;
      },
      { timeoutMs: 10_000, intervalMs: 200, description: 'two seconds without the grant' },
    );
    expect([...seen]).toEqual(['TokenReported=True secret=absent']);
    // and nothing gave the grant back meanwhile (else the case above proved nothing)
    expect((await msas.get(name, late.name))?.metadata.resourceVersion).toBe(last);
    // Any change to the MSA makes the hub controller grant its token Secret again.
    await msas.patchMerge(name, { metadata: { annotations: { 'example.com/touch': '1' } } }, late.name);
    const again = await waitForProjection(late, name, { notToken: first.token });
    expect(await authenticated(again.token)).toBe(true);
  });
});

describe('rotation', () => {
  it('a short validity rotates at the configured fraction: new token, new lastRefreshTimestamp, old token still valid', async () => {
    const fast = await msaCluster('msa-rotate');
    // 10m is the shortest token kube-apiserver issues; 0.5% of it is 3 s.
    await startAgent(fast, { refreshAtFraction: 0.005 });
    const msa = await createMsa(fast, { rotation: { validity: '10m' } });
    const name = msa.metadata.name;
    const first = await waitForProjection(fast, name);
    const second = await waitForProjection(fast, name, { notToken: first.token, timeoutMs: 15_000 });
    const c1 = decodeTokenClaims(first.token);
    const c2 = decodeTokenClaims(second.token);
    expect((c1?.exp ?? 0) - (c1?.iat ?? 0)).toBe(600);
    // Requeued for exactly iat + 3 s (not polled): the next token is 3–5 s younger (iat has 1 s steps).
    const gap = (c2?.iat ?? 0) - (c1?.iat ?? 0);
    expect(gap).toBeGreaterThanOrEqual(3);
    expect(gap).toBeLessThanOrEqual(5);
    const r1 = first.msa.status?.tokenSecretRef?.lastRefreshTimestamp ?? '';
    const r2 = second.msa.status?.tokenSecretRef?.lastRefreshTimestamp ?? '';
    expect(Date.parse(r2)).toBeGreaterThan(Date.parse(r1));
    expect(Date.parse(second.msa.status?.expirationTimestamp ?? '')).toBeGreaterThan(
      Date.parse(first.msa.status?.expirationTimestamp ?? ''),
    );
    expect(await authenticated(first.token)).toBe(true);
    expect(await authenticated(second.token)).toBe(true);
    expect(tokenOf(await hubSecrets.get(name, fast.name))).not.toBe(first.token);
  });

  it('rotation.enabled false rotates like any MSA (OCM deprecated the field): new token at the fraction, same validity', async () => {
    const fast = await msaCluster('msa-enabled-false');
    await startAgent(fast, { refreshAtFraction: 0.005 });
    const msa = await createMsa(fast, { rotation: { enabled: false, validity: '10m' } });
    const name = msa.metadata.name;
    const first = await waitForProjection(fast, name);
    const second = await waitForProjection(fast, name, { notToken: first.token, timeoutMs: 15_000 });
    expect(second.msa.spec?.rotation?.enabled).toBe(false);
    const claims = decodeTokenClaims(second.token);
    expect((claims?.exp ?? 0) - (claims?.iat ?? 0)).toBe(600);
    expect(second.msa.status?.expirationTimestamp).toBe(isoSeconds(claims?.exp));
    expect(second.msa.status?.conditions?.find((c) => c.type === 'TokenReported')?.status).toBe('True');
    expect(await authenticated(second.token)).toBe(true);
  });
});
