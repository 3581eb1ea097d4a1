// The hub side of ManagedServiceAccount: the TTL controller, the CLI helpers, and the boundary of
// the agent's hub identity (cluster A's agent cannot touch cluster B's namespace).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.ts';
import { isForbidden, ResourceClient } from '../../src/kube/index.ts';
import { type Secret, secretResource } from '../../src/serviceaccount/core.ts';
import { createManagedServiceAccount, listManagedServiceAccounts } from '../../src/serviceaccount/index.ts';
import { uniqueName } from './fixtures/helpers.ts';
import {
  createMsa,
  hubAdmin,
  type MsaCluster,
  msaCluster,
  msas,
  onCleanup,
  runCleanups,
  startAgent,
  waitForProjection,
  waitGone,
} from './fixtures/serviceaccount.ts';

let a: MsaCluster;
let b: MsaCluster;

beforeAll(async () => {
  a = await msaCluster('msa-a');
  b = await msaCluster('msa-b');
  await startAgent(a);
  await startAgent(b);
  // msaCluster started the hub's ManagedServiceAccount controllers (TTL among them).
});
afterAll(runCleanups);

describe('ttlSecondsAfterCreation', () => {
  it('the hub deletes the MSA when its TTL has passed (and not before); an MSA without TTL stays', async () => {
    const keep = await createMsa(a);
    const msa = await createMsa(a, { ttlSecondsAfterCreation: 3 });
    const name = msa.metadata.name;
    await waitForProjection(a, name);
    const created = Date.parse(msa.metadata.creationTimestamp ?? '');
    await waitGone('MSA with a 3 s TTL', () => msas.get(name, a.name), 15_000);
    const gone = Date.now();
    // creationTimestamp has 1 s steps: the deadline is created + 3 s of a time rounded down.
    expect(gone - created).toBeGreaterThanOrEqual(3_000);
    expect(gone - created).toBeLessThan(8_000);
    expect(await msas.get(keep.metadata.name, a.name)).toBeDefined();
  });

  it("the hub refuses a TTL of 0, as OCM's CRD does (minimum 0, exclusive); so does the CLI helper", async () => {
    await expect(createMsa(a, { ttlSecondsAfterCreation: 0 })).rejects.toThrow(/ttlSecondsAfterCreation/);
    await expect(
      createManagedServiceAccount(hubAdmin, {
        name: uniqueName('ttl0'),
        clusters: [a.name],
        ttlSecondsAfterCreation: 0,
      }),
    ).rejects.toThrow(InvalidArgumentError);
  });
});

describe('CLI helpers', () => {
  it('createManagedServiceAccount creates one MSA per cluster and reports each cluster on its own', async () => {
    const name = uniqueName('cli');
    onCleanup(() => msas.delete(name, a.name, { ignoreNotFound: true }));
    onCleanup(() => msas.delete(name, b.name, { ignoreNotFound: true }));
    const missing = uniqueName('no-such-cluster');
    const results = await createManagedServiceAccount(hubAdmin, {
      name,
      clusters: [a.name, b.name, missing],
      validity: '48h',
    });
    expect(results.map((r) => [r.cluster, r.created?.spec?.rotation?.validity])).toEqual([
      [a.name, '48h'],
      [b.name, '48h'],
      [missing, undefined],
    ]);
    expect(results[2]?.error).toMatch(/not found/);

    const again = await createManagedServiceAccount(hubAdmin, { name, clusters: [a.name] });
    expect(again[0]?.error).toMatch(/already exists/);

    await expect(
      createManagedServiceAccount(hubAdmin, { name, clusters: [a.name], validity: '1d' }),
    ).rejects.toThrow(InvalidArgumentError);
    await expect(
      createManagedServiceAccount(hubAdmin, { name, clusters: [a.name], validity: '5m' }),
    ).rejects.toThrow(/shorter than 10m0s/);
    await expect(
      createManagedServiceAccount(hubAdmin, { name: 'Bad_Name', clusters: [a.name] }),
    ).rejects.toThrow(/DNS subdomain/);
    await expect(createManagedServiceAccount(hubAdmin, { name, clusters: [] })).rejects.toThrow(
      /at least one/,
    );
  });

  it('listManagedServiceAccounts shows cluster, name, TokenReported, expiration and age', async () => {
    const name = uniqueName('cli-list');
    onCleanup(() => msas.delete(name, a.name, { ignoreNotFound: true }));
    onCleanup(() => msas.delete(name, b.name, { ignoreNotFound: true }));
    await createManagedServiceAccount(hubAdmin, { name, clusters: [b.name, a.name], validity: '24h' });
    const pa = await waitForProjection(a, name);
    await waitForProjection(b, name);
    const rows = (await listManagedServiceAccounts(hubAdmin)).filter((r) => r.name === name);
    expect(rows.map((r) => r.cluster)).toEqual([a.name, b.name].sort());
    const rowA = rows.find((r) => r.cluster === a.name);
    expect(rowA).toMatchObject({
      name,
      tokenReported: 'True',
      expiration: pa.msa.status?.expirationTimestamp,
    });
    expect(rowA?.age).toMatch(/^\d+s$/);
    const onlyA = await listManagedServiceAccounts(hubAdmin, { cluster: a.name });
    expect(onlyA.every((r) => r.cluster === a.name)).toBe(true);
    expect(onlyA.some((r) => r.name === name)).toBe(true);
  });
});

describe("the agent's hub identity", () => {
  it("cluster A's identity cannot write Secrets or read MSAs in cluster B's namespace (403), only in its own", async () => {
    const secretsAsA = new ResourceClient<Secret>(a.hubKubeConfig, secretResource);
    const msasAsA = new ResourceClient(a.hubKubeConfig, msas.descriptor);
    const secret = (namespace: string) => ({
      metadata: { name: uniqueName('probe'), namespace },
      type: 'Opaque',
      data: { token: 'eA==' },
    });

    const denied = await secretsAsA.create(secret(b.name)).catch((err: unknown) => err);
    expect(isForbidden(denied)).toBe(true);
    expect(String(denied)).toContain(`system:open-cluster-management:${a.name}:msa`);
    expect(isForbidden(await msasAsA.list({ namespace: b.name }).catch((err: unknown) => err))).toBe(true);
    expect(isForbidden(await secretsAsA.list({ namespace: 'default' }).catch((err: unknown) => err))).toBe(
      true,
    );
    const projected = await createMsa(b);
    await waitForProjection(b, projected.metadata.name);
    const overwrite = await secretsAsA
      .patchMerge(projected.metadata.name, { data: { token: 'eA==' } }, b.name)
      .catch((err: unknown) => err);
    expect(isForbidden(overwrite)).toBe(true);

    // In its own namespace it reads its MSAs' token Secrets, by name (the hub's per-MSA grant).
    const mine = await createMsa(a);
    await waitForProjection(a, mine.metadata.name);
    const own = await secretsAsA.get(mine.metadata.name, a.name);
    expect(own?.metadata.namespace).toBe(a.name);
  });
});
