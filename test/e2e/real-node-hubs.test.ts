// Hosted mode and several hubs on real nodes: `tether up --clusters 2 --hubs 2 --hosted cluster2=cluster1`'s
// environment. cluster2 is joined to the hub by `tether join --mode hosted`, its agent a pod on
// cluster1's node (namespace klusterlet-<cluster2>), reaching cluster2's apiserver from there and the
// hub only through squid, as cluster1's own agent does. cluster1 is joined to a second hub, hub2, with
// a second agent in its own namespace. Checked: cluster2 is Joined and Available, its add-ons
// (cluster-proxy and managed-serviceaccount hosted in its agent's process, cluster-gateway) are
// Available, a ManifestWork lands on cluster2, kubectl through the hub's gateway and a CONNECT
// through the frontend reach cluster2's apiserver, and cluster2's node runs no tether pod at all;
// cluster1 gets works from both hubs, each hub sees only its own, and hub2's works cannot reach the
// first hub's agent. Then cluster2's cluster-proxy and managed-serviceaccount are moved to hosted
// mode the OCM way (annotation hosting-cluster-name=cluster1): their Deployments run on cluster1 in
// klusterlet-<cluster2> by hosting works, with their credentials there, cluster2 still runs no
// tether pod, and the tunnel and ManagedServiceAccount tokens work through them. Last, a hub user's
// gateway requests cannot read hub2's agent credential on cluster1 until cluster1 grants it.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureNodeBinaries } from '../../src/localenv/binaries.ts';
import type { Environment } from '../../src/localenv/environment.ts';
import { startInClusterEnvironment } from '../../src/localenv/in-cluster-stack.ts';
import { pollUntil } from '../../src/wait.ts';

const exec = promisify(execFile);
const PREFIX = `hh${process.pid % 100000}-`;
const measured: Record<string, string> = {};
let parent: string;
let env: Environment | undefined;

function kubectl(kubeconfig: string, args: string[], timeout = 30_000): Promise<string> {
  return exec('kubectl', [`--kubeconfig=${kubeconfig}`, ...args], { timeout }).then((r) => r.stdout);
}

function environment(): Environment {
  if (!env) throw new Error('no environment');
  return env;
}
const cluster = (i: number) => {
  const c = environment().clusters[i];
  if (!c) throw new Error(`no cluster ${i}`);
  return c;
};

interface Pod {
  metadata: { namespace: string; name: string };
  spec: { nodeName?: string; containers: Array<{ image: string }> };
  status: { phase: string };
}

/** The first hub's agent credential on a cluster, as stored. */
function firstHubCredential(kubeconfig: string): Promise<string> {
  return kubectl(kubeconfig, [
    '-n',
    'open-cluster-management-agent',
    'get',
    'secret',
    'hub-kubeconfig-secret',
    '-o',
    'jsonpath={.data.kubeconfig}',
  ]);
}

beforeAll(async () => {
  await ensureNodeBinaries((l) => process.stderr.write(`[real-node-hubs] ${l}\n`));
  parent = mkdtempSync(join(tmpdir(), 'tether-hosted-nodes-'));
  const t = Date.now();
  env = await startInClusterEnvironment({
    clusters: 2,
    dir: join(parent, 'env'),
    namePrefix: PREFIX,
    joinArgs: ['--status-sync-interval=2'],
    hostedOn: { cluster2: 'cluster1' },
    hubs: 2,
    progress: (l) => process.stderr.write(`[real-node-hubs] ${l}\n`),
  });
  measured.start = `${((Date.now() - t) / 1000).toFixed(1)} s`;
}, 900_000);

afterAll(async () => {
  await env?.stop();
  if (parent) rmSync(parent, { recursive: true, force: true });
  process.stderr.write(`[real-node-hubs] measured: ${JSON.stringify(measured)}\n`);
}, 180_000);

describe('hosted mode on real nodes', () => {
  it("cluster2's agent runs on cluster1's node in klusterlet-<cluster2>; cluster2 and its add-ons are Available", async () => {
    const hosted = cluster(1).name;
    const hostingPods = JSON.parse(
      await kubectl(cluster(0).kubeconfigPath, ['-n', `klusterlet-${hosted}`, 'get', 'pods', '-o', 'json']),
    ) as { items: Pod[] };
    const running = hostingPods.items.filter((p) => p.status.phase === 'Running');
    expect(running.map((p) => p.metadata.name.replace(/-[a-z0-9]+-[a-z0-9]+$/, ''))).toEqual([
      'klusterlet-agent',
    ]);
    expect(running[0]?.spec.nodeName).toBe(cluster(0).name);
    const mc = JSON.parse(
      await kubectl(environment().hub.kubeconfigPath, ['get', 'managedcluster', hosted, '-o', 'json']),
    );
    const status = (type: string) =>
      (mc.status.conditions as Array<{ type: string; status: string }>).find((c) => c.type === type)?.status;
    expect(status('ManagedClusterJoined')).toBe('True');
    expect(status('ManagedClusterConditionAvailable')).toBe('True');
    // the managed cluster's own address and CA, as its hosted agent reaches it
    expect(mc.spec.managedClusterClientConfigs[0].url).toMatch(/^https:\/\/10\.244\.\d+\.1:\d+$/);
    const addons = await kubectl(environment().hub.kubeconfigPath, [
      '-n',
      hosted,
      'get',
      'managedclusteraddons',
    ]);
    for (const name of ['cluster-gateway', 'cluster-proxy', 'managed-serviceaccount'])
      expect(addons).toMatch(new RegExp(`^${name}\\s+True`, 'm'));
  });

  it("cluster2's node runs no tether pod: nothing of tether's is scheduled on the hosted cluster", async () => {
    const pods = JSON.parse(
      await kubectl(cluster(1).kubeconfigPath, ['get', 'pods', '-A', '-o', 'json']),
    ) as {
      items: Pod[];
    };
    const tetherImage = environment().image?.ref;
    if (!tetherImage) throw new Error('no tether image');
    // cluster DNS runs on every node (an image of the local environment's own); tether's image nowhere here
    const tetherPods = pods.items.filter((p) => p.spec.containers.some((c) => c.image === tetherImage));
    expect(tetherPods.map((p) => `${p.metadata.namespace}/${p.metadata.name}`)).toEqual([]);
    // the same look on the hosting cluster finds its agents: its own for each hub, and cluster2's
    const hostingPods = JSON.parse(
      await kubectl(cluster(0).kubeconfigPath, ['get', 'pods', '-A', '-o', 'json']),
    ) as {
      items: Pod[];
    };
    const onHosting = hostingPods.items
      .filter((p) => p.spec.containers.some((c) => c.image === tetherImage))
      .map((p) => p.metadata.namespace)
      .sort();
    expect(onHosting).toEqual(
      [
        `klusterlet-${cluster(1).name}`,
        'open-cluster-management-agent',
        'open-cluster-management-agent-hub2',
      ].sort(),
    );
    const namespaces = await kubectl(cluster(1).kubeconfigPath, ['get', 'ns', '-o', 'name']);
    expect(namespaces).not.toContain('namespace/open-cluster-management-agent\n');
    expect(namespaces).not.toContain(`klusterlet-${cluster(1).name}`);
  });

  it('a ManifestWork for cluster2 lands on cluster2; kubectl through the gateway reaches it', async () => {
    const hosted = cluster(1).name;
    const hubKc = environment().hub.kubeconfigPath;
    const work = `apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: { name: hosted-probe, namespace: ${hosted} }
spec:
  workload:
    manifests:
      - { apiVersion: v1, kind: ConfigMap, metadata: { name: hosted-probe, namespace: default }, data: { from: hub } }
`;
    const apply = exec('kubectl', [`--kubeconfig=${hubKc}`, 'apply', '-f', '-']);
    apply.child.stdin?.end(work);
    await apply;
    const t = Date.now();
    await pollUntil(
      async () => {
        const out = await kubectl(cluster(1).kubeconfigPath, [
          '-n',
          'default',
          'get',
          'configmap',
          'hosted-probe',
          '-o',
          'jsonpath={.data.from}',
        ]).catch(() => '');
        return out === 'hub';
      },
      { timeoutMs: 60_000, intervalMs: 500, description: 'the work applied on cluster2' },
    );
    measured.workApplied = `${((Date.now() - t) / 1000).toFixed(1)} s`;
    const gatewayKc = environment().gatewayKubeconfigs?.[hosted];
    if (!gatewayKc) throw new Error('no gateway kubeconfig for cluster2');
    const viaGateway = await kubectl(gatewayKc, [
      '-n',
      'default',
      'get',
      'configmap',
      'hosted-probe',
      '-o',
      'name',
    ]);
    expect(viaGateway.trim()).toBe('configmap/hosted-probe');
  });

  it("the CONNECT frontend reaches cluster2's apiserver through the hosted agent's tunnel", async () => {
    const services = environment().hubServices;
    if (!services) throw new Error('no hub services');
    const hosted = cluster(1);
    const frontend = new URL(services.connectFrontendUrl);
    const status = await new Promise<string>((resolve, reject) => {
      const outer = tlsConnect({
        host: frontend.hostname,
        port: Number(frontend.port),
        ca: readFileSync(services.connectCaPath),
        cert: readFileSync(services.proxyClientCertPath),
        key: readFileSync(services.proxyClientKeyPath),
      });
      outer.once('error', reject);
      outer.once('secureConnect', () => outer.write(`CONNECT ${hosted.name}:443 HTTP/1.1\r\n\r\n`));
      let head = '';
      outer.on('data', function onData(d: Buffer) {
        head += d.toString('latin1');
        if (!head.includes('\r\n\r\n')) return;
        outer.off('data', onData);
        if (!head.startsWith('HTTP/1.1 200')) {
          outer.destroy();
          reject(new Error(`CONNECT answered ${head.split('\r\n')[0]}`));
          return;
        }
        const inner = tlsConnect({
          socket: outer,
          ca: readFileSync(hosted.caCertPath),
          servername: 'localhost',
        });
        inner.once('error', reject);
        inner.once('secureConnect', () =>
          inner.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'),
        );
        let body = '';
        inner.on('data', (c: Buffer) => {
          body += c.toString();
        });
        inner.once('close', () => {
          outer.destroy();
          resolve(body.split('\r\n')[0] ?? '');
        });
      });
    });
    // /healthz answers 401 or 200 depending on anonymous auth: either way, cluster2's apiserver answered
    expect(status).toMatch(/^HTTP\/1\.1 (200|401|403)/);
  });

  it('cluster1 is joined to hub2 by a second agent in its own namespace; each hub sees only its own clusters', async () => {
    const hub2 = environment().hub2;
    if (!hub2) throw new Error('no hub2');
    const onHub2 = await kubectl(hub2.kubeconfigPath, ['get', 'managedclusters', '-o', 'name']);
    expect(onHub2.trim().split('\n')).toEqual([
      `managedcluster.cluster.open-cluster-management.io/${cluster(0).name}`,
    ]);
    const onHub = await kubectl(environment().hub.kubeconfigPath, ['get', 'managedclusters', '-o', 'name']);
    expect(onHub.trim().split('\n').sort()).toEqual(
      [cluster(0).name, cluster(1).name]
        .map((n) => `managedcluster.cluster.open-cluster-management.io/${n}`)
        .sort(),
    );
    const mc = JSON.parse(
      await kubectl(hub2.kubeconfigPath, ['get', 'managedcluster', cluster(0).name, '-o', 'json']),
    );
    const available = (mc.status.conditions as Array<{ type: string; status: string }>).find(
      (c) => c.type === 'ManagedClusterConditionAvailable',
    );
    expect(available?.status).toBe('True');
    const pods = JSON.parse(
      await kubectl(cluster(0).kubeconfigPath, [
        '-n',
        'open-cluster-management-agent-hub2',
        'get',
        'pods',
        '-o',
        'json',
      ]),
    ) as { items: Pod[] };
    expect(
      pods.items
        .filter((p) => p.status.phase === 'Running')
        .map((p) => p.metadata.name.replace(/-[a-z0-9]+-[a-z0-9]+$/, '')),
    ).toEqual(['klusterlet-agent']);
    // two identities on one cluster: each agent's hub credential in its own namespace
    for (const ns of ['open-cluster-management-agent', 'open-cluster-management-agent-hub2'])
      expect(
        await kubectl(cluster(0).kubeconfigPath, [
          '-n',
          ns,
          'get',
          'secret',
          'hub-kubeconfig-secret',
          '-o',
          'name',
        ]),
      ).toContain('hub-kubeconfig-secret');
  });

  it("cluster1 gets works from both hubs, each recorded under its own hub's hash; each hub sees only its own work", async () => {
    const hub2 = environment().hub2;
    if (!hub2) throw new Error('no hub2');
    const c1 = cluster(0);
    const work = (name: string, from: string) => `apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: { name: ${name}, namespace: ${c1.name} }
spec:
  workload:
    manifests:
      - { apiVersion: v1, kind: ConfigMap, metadata: { name: ${name}, namespace: default }, data: { from: ${from} } }
`;
    const apply = async (kubeconfig: string, yaml: string) => {
      const run = exec('kubectl', [`--kubeconfig=${kubeconfig}`, 'apply', '-f', '-']);
      run.child.stdin?.end(yaml);
      await run;
    };
    await apply(environment().hub.kubeconfigPath, work('from-hub', 'hub'));
    await apply(hub2.kubeconfigPath, work('from-hub2', 'hub2'));
    for (const [name, from] of [
      ['from-hub', 'hub'],
      ['from-hub2', 'hub2'],
    ] as const)
      await pollUntil(
        async () =>
          (await kubectl(c1.kubeconfigPath, [
            '-n',
            'default',
            'get',
            'configmap',
            name,
            '-o',
            'jsonpath={.data.from}',
          ]).catch(() => '')) === from,
        { timeoutMs: 60_000, intervalMs: 500, description: `${name} applied on cluster1` },
      );
    const applied = (await kubectl(c1.kubeconfigPath, ['get', 'appliedmanifestworks', '-o', 'name']))
      .trim()
      .split('\n')
      .map((n) => n.replace(/^.*\//, ''));
    const hashOf = (work: string) => applied.find((n) => n.endsWith(`-${work}`))?.slice(0, -work.length - 1);
    expect(hashOf('from-hub')).toMatch(/^[0-9a-f]{64}$/);
    expect(hashOf('from-hub2')).toMatch(/^[0-9a-f]{64}$/);
    expect(hashOf('from-hub')).not.toBe(hashOf('from-hub2'));
    expect(
      await kubectl(hub2.kubeconfigPath, ['-n', c1.name, 'get', 'manifestworks', '-o', 'name']),
    ).not.toContain('from-hub\n');
    expect(
      await kubectl(environment().hub.kubeconfigPath, ['-n', c1.name, 'get', 'manifestworks', '-o', 'name']),
    ).not.toContain('from-hub2');
  });

  it("hub2's work cannot touch the first hub's agent namespace on cluster1 (refused, the rest applies)", async () => {
    const hub2 = environment().hub2;
    if (!hub2) throw new Error('no hub2');
    const c1 = cluster(0);
    const before = await firstHubCredential(c1.kubeconfigPath);
    const yaml = `apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: { name: reach-hub-agent, namespace: ${c1.name} }
spec:
  workload:
    manifests:
      - { apiVersion: v1, kind: Secret, metadata: { name: hub-kubeconfig-secret, namespace: open-cluster-management-agent }, stringData: { kubeconfig: hub2 was here } }
      - { apiVersion: v1, kind: ConfigMap, metadata: { name: reach-hub-agent-ok, namespace: default }, data: { ok: "yes" } }
`;
    const run = exec('kubectl', [`--kubeconfig=${hub2.kubeconfigPath}`, 'apply', '-f', '-']);
    run.child.stdin?.end(yaml);
    await run;
    const message = await pollUntil(
      async () => {
        const w = JSON.parse(
          await kubectl(hub2.kubeconfigPath, [
            '-n',
            c1.name,
            'get',
            'manifestwork',
            'reach-hub-agent',
            '-o',
            'json',
          ]),
        );
        const manifests = (w.status?.resourceStatus?.manifests ?? []) as Array<{
          resourceMeta: { ordinal: number };
          conditions: Array<{ type: string; status: string; message?: string }>;
        }>;
        const cond = (i: number) =>
          manifests.find((m) => m.resourceMeta.ordinal === i)?.conditions.find((c) => c.type === 'Applied');
        return cond(0)?.status === 'False' && cond(1)?.status === 'True' ? cond(0)?.message : undefined;
      },
      {
        timeoutMs: 60_000,
        intervalMs: 500,
        description: "hub2's work refused on its first manifest, applied on its second",
      },
    );
    expect(message).toContain("holds an agent's Secrets");
    const after = await firstHubCredential(c1.kubeconfigPath);
    expect(after).toBe(before);
  });

  it("cluster2's cluster-proxy and managed-serviceaccount run hosted the OCM way on cluster1; cluster2 still runs no tether pod", async () => {
    const hubKc = environment().hub.kubeconfigPath;
    const hosted = cluster(1).name;
    const hosting = cluster(0);
    const ns = `klusterlet-${hosted}`;
    const t = Date.now();
    for (const addon of ['cluster-proxy', 'managed-serviceaccount'])
      await kubectl(hubKc, [
        '-n',
        hosted,
        'annotate',
        'managedclusteraddon',
        addon,
        `addon.open-cluster-management.io/hosting-cluster-name=${hosting.name}`,
      ]);
    const conditionsOf = async (addon: string) => {
      const mca = JSON.parse(
        await kubectl(hubKc, ['-n', hosted, 'get', 'managedclusteraddon', addon, '-o', 'json']),
      );
      return Object.fromEntries(
        ((mca.status?.conditions ?? []) as Array<{ type: string; status: string }>).map((c) => [
          c.type,
          c.status,
        ]),
      );
    };
    for (const addon of ['cluster-proxy', 'managed-serviceaccount'])
      await pollUntil(
        async () => {
          const c = await conditionsOf(addon);
          return (
            c['HostingClusterValidity'] === 'True' &&
            c['HostingManifestApplied'] === 'True' &&
            c['Available'] === 'True'
          );
        },
        { timeoutMs: 180_000, intervalMs: 1000, description: `${addon} hosted, applied and Available` },
      );
    measured.hostedAddonsAvailable = `${((Date.now() - t) / 1000).toFixed(1)} s`;
    const works = await kubectl(hubKc, ['-n', hosting.name, 'get', 'manifestworks', '-o', 'name']);
    for (const addon of ['cluster-proxy', 'managed-serviceaccount'])
      expect(works).toContain(`addon-${addon}-deploy-hosting-${hosted}-0`);
    const pods = JSON.parse(
      await kubectl(hosting.kubeconfigPath, ['-n', ns, 'get', 'pods', '-o', 'json']),
    ) as {
      items: Pod[];
    };
    const running = pods.items.filter((p) => p.status.phase === 'Running');
    expect(running.map((p) => p.metadata.name.replace(/-[a-z0-9]+-[a-z0-9]+$/, '')).sort()).toEqual([
      'cluster-proxy-proxy-agent',
      'klusterlet-agent',
      'managed-serviceaccount-addon-agent',
    ]);
    for (const p of running) expect(p.spec.nodeName).toBe(hosting.name);
    // the add-ons' credentials next to the hosted klusterlet's, on the hosting cluster only
    const secrets = await kubectl(hosting.kubeconfigPath, ['-n', ns, 'get', 'secrets', '-o', 'name']);
    for (const name of [
      'cluster-proxy-hub-kubeconfig',
      'managed-serviceaccount-hub-kubeconfig',
      'managed-serviceaccount-managed-kubeconfig',
    ])
      expect(secrets).toContain(`secret/${name}\n`);
    const onManaged = await kubectl(cluster(1).kubeconfigPath, ['get', 'secrets', '-A', '-o', 'name']);
    expect(onManaged).not.toMatch(/hub-kubeconfig/);
    const tetherImage = environment().image?.ref;
    const managedPods = JSON.parse(
      await kubectl(cluster(1).kubeconfigPath, ['get', 'pods', '-A', '-o', 'json']),
    ) as {
      items: Pod[];
    };
    expect(managedPods.items.filter((p) => p.spec.containers.some((c) => c.image === tetherImage))).toEqual(
      [],
    );

    // the tunnel, now the hosted proxy-agent's: kubectl through the gateway still reaches cluster2
    const gatewayKc = environment().gatewayKubeconfigs?.[hosted];
    if (!gatewayKc) throw new Error('no gateway kubeconfig for cluster2');
    expect((await kubectl(gatewayKc, ['get', 'ns', 'default', '-o', 'name'])).trim()).toBe(
      'namespace/default',
    );

    // a ManagedServiceAccount for cluster2: its ServiceAccount on cluster2, its token on the hub
    const msa = `apiVersion: authentication.open-cluster-management.io/v1beta1
kind: ManagedServiceAccount
metadata: { name: hosted-msa, namespace: ${hosted} }
spec: { rotation: {} }
`;
    const apply = exec('kubectl', [`--kubeconfig=${hubKc}`, 'apply', '-f', '-']);
    apply.child.stdin?.end(msa);
    await apply;
    await pollUntil(
      async () =>
        (
          await kubectl(hubKc, [
            '-n',
            hosted,
            'get',
            'secret',
            'hosted-msa',
            '-o',
            'jsonpath={.data.token}',
          ]).catch(() => '')
        ).length > 0,
      { timeoutMs: 60_000, intervalMs: 500, description: "the ManagedServiceAccount's token on the hub" },
    );
    expect(
      await kubectl(cluster(1).kubeconfigPath, [
        '-n',
        'open-cluster-management-agent-addon',
        'get',
        'serviceaccount',
        'hosted-msa',
        '-o',
        'name',
      ]),
    ).toContain('serviceaccount/hosted-msa');
  }, 300_000);

  it("a hub user's gateway requests cannot read hub2's agent credential on cluster1 unless cluster1 grants it", async () => {
    const hubKc = environment().hub.kubeconfigPath;
    const c1 = cluster(0);
    const gatewayKc = environment().gatewayKubeconfigs?.[c1.name];
    if (!gatewayKc) throw new Error('no gateway kubeconfig for cluster1');
    const user = `${PREFIX}gateway-user`;
    // on the hub: this user may use cluster1's gateway, nothing more
    const hubGrant = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: ${user} }
rules: [{ apiGroups: [cluster.core.oam.dev], resources: [clustergateways/proxy], resourceNames: [${c1.name}], verbs: [get, create] }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: ${user} }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${user} }
subjects: [{ apiGroup: rbac.authorization.k8s.io, kind: User, name: ${user} }]
`;
    const apply = async (kubeconfig: string, yaml: string) => {
      const run = exec('kubectl', [`--kubeconfig=${kubeconfig}`, 'apply', '-f', '-']);
      run.child.stdin?.end(yaml);
      await run;
    };
    await apply(hubKc, hubGrant);
    const read = () =>
      kubectl(gatewayKc, [
        `--as=${user}`,
        '-n',
        'open-cluster-management-agent-hub2',
        'get',
        'secret',
        'hub-kubeconfig-secret',
        '-o',
        'name',
      ]).then(
        (out) => ({ ok: true, out }),
        (err: { stderr?: string }) => ({ ok: false, out: err.stderr ?? '' }),
      );
    const denied = await pollUntil(
      async () => {
        const r = await read();
        if (!r.ok && /forbidden/i.test(r.out)) return r;
        throw new Error(`${r.ok ? 'served' : 'failed'}: ${r.out.slice(0, 300)}`);
      },
      { timeoutMs: 30_000, intervalMs: 1000, description: 'the ungranted read refused by cluster1' },
    );
    expect(denied.out).toContain(`cluster:hub:${user}`);
    // cluster1's admin grants it: a Role in hub2's agent namespace for the hub user's gateway identity
    await apply(
      c1.kubeconfigPath,
      `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: ${user}, namespace: open-cluster-management-agent-hub2 }
rules: [{ apiGroups: [""], resources: [secrets], resourceNames: [hub-kubeconfig-secret], verbs: [get] }]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: ${user}, namespace: open-cluster-management-agent-hub2 }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: ${user} }
subjects: [{ apiGroup: rbac.authorization.k8s.io, kind: User, name: "cluster:hub:${user}" }]
`,
    );
    const granted = await pollUntil(
      async () => {
        const r = await read();
        if (r.ok) return r;
        throw new Error(r.out.slice(0, 300));
      },
      { timeoutMs: 30_000, intervalMs: 1000, description: 'the granted read served' },
    );
    expect(granted.out.trim()).toBe('secret/hub-kubeconfig-secret');
  }, 120_000);
});
