// kubectl reaches a managed cluster through the hub: kubectl → hub kube-apiserver → aggregator →
// gateway (SubjectAccessReview) → tunnel stream → agent behind squid → cluster1's kube-apiserver,
// using the hub kubeconfig with the server URL rewritten to clustergateways/<cluster>/proxy.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../src/wait.ts';
import {
  cacheArgs,
  cluster1Core,
  cluster1GatewayToken,
  cluster1Target,
  env,
  type GatewayFixture,
  startGatewayFixture,
} from './fixtures/gateway.ts';
import { kubectl, uniqueName } from './fixtures/helpers.ts';

let f: GatewayFixture;
const cluster = uniqueName('gw');
const onlyThere = uniqueName('only-on-cluster1');
let kc = '';

beforeAll(async () => {
  f = await startGatewayFixture();
  await f.addCluster({ name: cluster, ...cluster1Target() }, await cluster1GatewayToken(cluster));
  await cluster1Core.createNamespace({ body: { metadata: { name: onlyThere } } });
  kc = f.kubeconfigFor(cluster);
});

afterAll(async () => {
  await cluster1Core.deleteNamespace({ name: onlyThere }).catch(() => {});
  await f?.stop();
});

const k = (args: string[], opts: { input?: string; timeoutMs?: number } = {}) =>
  kubectl(kc, [...cacheArgs(f), ...args], opts);
/** `kubectl get --raw` ignores the kubeconfig's server path: give the whole proxy path on the hub. */
const raw = (c: string, path: string, timeoutMs?: number) =>
  kubectl(
    env.hub.kubeconfigPath,
    ['get', '--raw', `/apis/cluster.core.oam.dev/v1alpha1/clustergateways/${c}/proxy${path}`],
    {
      timeoutMs,
    },
  );

describe('kubectl through the ClusterGateway proxy', () => {
  it('lists the managed cluster namespaces (one exists only there) and answers /healthz', async () => {
    const names = (await k(['get', 'ns', '-o', 'name'])).split('\n');
    expect(names).toContain(`namespace/${onlyThere}`);
    expect(names).toContain('namespace/kube-system');
    expect((await raw(cluster, '/healthz')).trim()).toBe('ok');
    const version = JSON.parse(await raw(cluster, '/version')) as { gitVersion: string };
    expect(version.gitVersion).toMatch(/^v1\./);
  });

  it('applies and deletes objects (POST, PATCH, DELETE go through)', async () => {
    const ns = onlyThere;
    const manifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: applied
  namespace: ${ns}
data:
  color: blue
`;
    expect(await k(['apply', '-f', f.file('cm.yaml', manifest)])).toContain('configmap/applied created');
    const cm = await cluster1Core.readNamespacedConfigMap({ name: 'applied', namespace: ns });
    expect(cm.data?.color).toBe('blue');
    const changed = manifest.replace('blue', 'green');
    expect(
      await k(['apply', '--server-side', '-f', f.file('cm2.yaml', changed), '--force-conflicts']),
    ).toContain('serverside-applied');
    expect((await cluster1Core.readNamespacedConfigMap({ name: 'applied', namespace: ns })).data?.color).toBe(
      'green',
    );
    await k(['apply', '--dry-run=server', '-f', f.file('cm3.yaml', manifest.replace('blue', 'red'))]);
    expect((await cluster1Core.readNamespacedConfigMap({ name: 'applied', namespace: ns })).data?.color).toBe(
      'green',
    );
    expect(await k(['delete', 'configmap', 'applied', '-n', ns])).toContain('deleted');
    await expect(cluster1Core.readNamespacedConfigMap({ name: 'applied', namespace: ns })).rejects.toThrow();
  });

  it('kubectl get -w receives an event for an object created after the watch started', async () => {
    const child = spawn(
      'kubectl',
      ['--kubeconfig', kc, ...cacheArgs(f), 'get', 'configmaps', '-n', onlyThere, '-w', '-o', 'name'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    try {
      // The watch is established once the initial list (kube-root-ca.crt) is printed.
      await pollUntil(() => out.includes('configmap/kube-root-ca.crt') || out.length > 0, {
        timeoutMs: 20_000,
        description: 'kubectl get -w to print the initial list',
      });
      await cluster1Core.createNamespacedConfigMap({
        namespace: onlyThere,
        body: { metadata: { name: 'watched' }, data: { a: 'b' } },
      });
      await pollUntil(() => out.includes('configmap/watched'), {
        timeoutMs: 20_000,
        description: 'the watch event for configmap/watched',
      });
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('kubectl api-resources lists the managed cluster resources', async () => {
    const out = await k(['api-resources', '-o', 'name']);
    expect(out.split('\n')).toContain('namespaces');
    // the managed cluster has no ClusterGateways: this is its discovery, not the hub's
    expect(out).not.toContain('clustergateways');
  });

  it('a list of 2 000 ConfigMaps arrives whole', async () => {
    const ns = uniqueName('big-list');
    await cluster1Core.createNamespace({ body: { metadata: { name: ns } } });
    try {
      const payload = 'x'.repeat(512);
      const names = Array.from({ length: 2000 }, (_, i) => `big-${i}`);
      for (let i = 0; i < names.length; i += 200) {
        await Promise.all(
          names.slice(i, i + 200).map((name) =>
            cluster1Core.createNamespacedConfigMap({
              namespace: ns,
              body: { metadata: { name }, data: { payload } },
            }),
          ),
        );
      }
      const text = await raw(cluster, `/api/v1/namespaces/${ns}/configmaps`, 120_000);
      const list = JSON.parse(text) as {
        items: Array<{ metadata: { name: string }; data?: { payload?: string } }>;
      };
      const big = list.items.filter((i) => i.metadata.name.startsWith('big-'));
      expect(big).toHaveLength(2000);
      expect(big.every((i) => i.data?.payload === payload)).toBe(true);
      const viaGet = (await k(['get', 'configmaps', '-n', ns, '-o', 'name', '--chunk-size=0'])).split('\n');
      expect(viaGet.filter((l) => l.startsWith('configmap/big-'))).toHaveLength(2000);
    } finally {
      await cluster1Core.deleteNamespace({ name: ns }).catch(() => {});
    }
  });

  it('examples/list-namespaces.ts lists the namespaces of every managed cluster from the hub kubeconfig', async () => {
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ['examples/list-namespaces.ts', env.hub.kubeconfigPath], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
      });
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      child.on('exit', (code) =>
        code === 0 ? resolve(stdout) : reject(new Error(`exit ${code}: ${stderr}`)),
      );
    });
    const line = out.split('\n').find((l) => l.startsWith(`${cluster}: `));
    expect(line?.split(' ')).toEqual(expect.arrayContaining([onlyThere, 'kube-system']));
  });

  it('an unknown cluster is 404 NotFound', async () => {
    const unknown = f.kubeconfigFor('no-such-cluster');
    // kubectl's discovery swallows the message; --raw shows the gateway's Status.
    await expect(kubectl(unknown, [...cacheArgs(f), 'get', 'ns'])).rejects.toThrow(/\(NotFound\)/);
    await expect(raw('no-such-cluster', '/healthz')).rejects.toThrow(
      /clustergateways.cluster.core.oam.dev "no-such-cluster" not found/,
    );
  });
});
