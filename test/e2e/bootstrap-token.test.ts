// `tether init --use-bootstrap-token`: a Kubernetes bootstrap token in the form clusteradm reads
// (`clusteradm get token --use-bootstrap-token`, replayed as test/e2e/fixtures/clusteradm.ts does),
// on the shared real hub. The token authenticates as a bootstrapper of managed clusters and holds
// exactly the bootstrap rights; an expired one is refused by the apiserver.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { ResourceClient } from '../../src/kube/index.ts';
import { secretResource } from '../../src/kube/kinds.ts';
import { tetherBin } from '../../src/localenv/process.ts';
import { newBootstrapTokenSecret } from '../../src/registration/bootstrap-token.ts';
import * as clusteradm from './fixtures/clusteradm.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig } from './fixtures/helpers.ts';

const env = testEnv();
const hub = adminKubeConfig(env.hub);
const dir = mkdtempSync(join(tmpdir(), 'tether-bootstrap-token-'));
const made: string[] = [];

afterAll(async () => {
  const core = hub.makeApiClient(CoreV1Api);
  for (const name of made)
    await core.deleteNamespacedSecret({ name, namespace: 'kube-system' }).catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

function tether(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [tetherBin, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** The hub, as a caller holding only `token`. */
function asToken(token: string): KubeConfig {
  const kc = new KubeConfig();
  const cluster = hub.getCurrentCluster();
  kc.loadFromOptions({
    clusters: [{ name: 'hub', server: cluster?.server ?? '', caData: cluster?.caData }],
    users: [{ name: 'bootstrap', token }],
    contexts: [{ name: 'bootstrap', cluster: 'hub', user: 'bootstrap' }],
    currentContext: 'bootstrap',
  });
  return kc;
}

const reviews = (kc: KubeConfig) =>
  new ResourceClient<{ metadata?: object; status?: { userInfo?: { username?: string; groups?: string[] } } }>(
    kc,
    {
      group: 'authentication.k8s.io',
      version: 'v1',
      plural: 'selfsubjectreviews',
      kind: 'SelfSubjectReview',
      namespaced: false,
    },
  );

async function allowed(kc: KubeConfig, attrs: Record<string, string>): Promise<boolean> {
  const r = await new ResourceClient<{ metadata?: object; status?: { allowed?: boolean } }>(kc, {
    group: 'authorization.k8s.io',
    version: 'v1',
    plural: 'selfsubjectaccessreviews',
    kind: 'SelfSubjectAccessReview',
    namespaced: false,
  }).create({ spec: { resourceAttributes: attrs } } as never);
  return r.status?.allowed === true;
}

describe('tether init --use-bootstrap-token', () => {
  it('leaves the token clusteradm get token --use-bootstrap-token finds, and prints it in the join line', async () => {
    const init = await tether([
      'init',
      '--bootstrap-only',
      '--use-bootstrap-token',
      '--bootstrap-token-expiration=2h',
      '--kubeconfig',
      env.hub.kubeconfigPath,
      '--ca-out',
      join(dir, 'hub-ca.crt'),
    ]);
    expect(init.code, init.stderr).toBe(0);
    const token = await clusteradm.getBootstrapToken(hub);
    made.push(`bootstrap-token-${token.split('.')[0]}`);
    expect(token).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    expect(init.stdout).toContain(`--hub-token ${token} `);
    const secret = await hub
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ name: `bootstrap-token-${token.split('.')[0]}`, namespace: 'kube-system' });
    expect(secret.type).toBe('bootstrap.kubernetes.io/token');
    const expires = new Date(Buffer.from(secret.data?.expiration ?? '', 'base64').toString('utf8')).getTime();
    expect(Math.abs(expires - (Date.now() + 2 * 3600_000))).toBeLessThan(120_000);
  });

  it('the token is a managed-cluster bootstrapper with the bootstrap rights and nothing more', async () => {
    const token = await clusteradm.getBootstrapToken(hub);
    const kc = asToken(token);
    const me = await reviews(kc).create({} as never);
    expect(me.status?.userInfo?.username).toBe(`system:bootstrap:${token.split('.')[0]}`);
    expect(me.status?.userInfo?.groups).toContain('system:bootstrappers:managedcluster');
    const may = (verb: string, group: string, resource: string, namespace = '') =>
      allowed(kc, { verb, group, resource, ...(namespace ? { namespace } : {}) });
    expect(await may('create', 'certificates.k8s.io', 'certificatesigningrequests')).toBe(true);
    expect(await may('create', 'cluster.open-cluster-management.io', 'managedclusters')).toBe(true);
    expect(await may('update', 'cluster.open-cluster-management.io', 'managedclusters')).toBe(false);
    expect(await may('list', '', 'secrets', 'kube-system')).toBe(false);
    expect(await may('get', '', 'secrets', 'open-cluster-management')).toBe(false);
    expect(await may('create', '', 'pods', 'default')).toBe(false);
    expect(await may('update', 'certificates.k8s.io', 'certificatesigningrequests/approval')).toBe(false);
  });

  it('an expired bootstrap token is refused (401)', async () => {
    const expired = newBootstrapTokenSecret(-60);
    await new ResourceClient(hub, secretResource).create(expired.secret as never);
    made.push(expired.secret.metadata?.name ?? '');
    const err = await reviews(asToken(expired.token))
      .create({} as never)
      .catch((e: unknown) => e as { status?: number });
    expect((err as { status?: number }).status).toBe(401);
  });
});
