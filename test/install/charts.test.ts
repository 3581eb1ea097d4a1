// The Helm charts are what `tether init` / `tether join` apply: the committed charts are exactly what
// `npm run charts` generates from src/install, and the real helm (built from hack/helm) renders the
// same objects as hubManifests() / agentManifests() for the same values — every combination of the
// agent's optional tunnel and forward proxy, every agent endpoint type of the hub — with
// certificates that Helm generates under hub-pki.ts's Secret names and keys. Both charts lint.

import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { addonConfigAdmissionObjects } from '../../src/addon/hub/config/admission.ts';
import { inProcessAddonNames } from '../../src/api/addon-in-process.ts';
import { hubCrdManifests, managedCrdManifests } from '../../src/api/index.ts';
import { type AgentInstallOptions, agentManifests } from '../../src/install/agent.ts';
import { chartsDir, generateCharts } from '../../src/install/charts.ts';
import { type AgentEndpointType, agentEndpointTypes, hubManifests } from '../../src/install/hub.ts';
import { hubPki } from '../../src/install/hub-pki.ts';
import { hubNames } from '../../src/install/names.ts';
import { ensureHelm, runHelm } from '../../src/localenv/helm.ts';
import { createCertificateAuthority } from '../../src/pki/index.ts';
import { placementAdmissionObjects } from '../../src/placement/hub/clustersets-admission.ts';
import { bootstrapIdentityObjects } from '../../src/registration/bootstrap.ts';
import { hubAdmissionObjects } from '../../src/registration/hub/admission-policies.ts';

type Obj = KubernetesObject & {
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  type?: string;
};

const tmp = mkdtempSync(join(tmpdir(), 'tether-charts-'));
const home = join(tmp, 'helm-home');
let helm = '';

beforeAll(async () => {
  // first run on a machine builds helm from the Go module proxy (≈ 2 min on 2 cores)
  helm = await ensureHelm((line) => process.stderr.write(`[helm] ${line}\n`));
}, 20 * 60_000);

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

const key = (o: KubernetesObject): string => `${o.kind} ${o.metadata?.namespace ?? ''}/${o.metadata?.name}`;

/** `helm template` of a chart with values (written to a file, PEMs included) → objects by key. */
async function template(chart: string, values: Record<string, unknown>): Promise<Map<string, Obj>> {
  const file = join(tmp, `values-${chart}-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(values));
  const { stdout } = await runHelm(
    helm,
    ['template', 'tether', join(chartsDir, chart), '--include-crds', '--values', file],
    { home },
  );
  const objects = parseAllDocuments(stdout)
    .map((d) => d.toJSON() as Obj | null)
    .filter((o): o is Obj => o !== null);
  const byKey = new Map(objects.map((o) => [key(o), o]));
  expect(byKey.size, 'no object rendered twice').toBe(objects.length);
  return byKey;
}

function byKey(objects: KubernetesObject[]): Map<string, Obj> {
  return new Map(objects.map((o) => [key(o), o as Obj]));
}

const crdObjects = (crds: Array<{ kind: string; metadata: { name: string } }>): Obj[] =>
  crds.map((c) => c as unknown as Obj);

describe('generated charts', () => {
  it('the committed charts are what npm run charts generates from src/install', async () => {
    const generated = await generateCharts();
    const expected = new Map<string, string>();
    for (const [chart, files] of Object.entries(generated))
      for (const f of files) expected.set(join(chart, f.path), f.content);
    const committed = new Map(
      filesUnder(chartsDir).map((p) => [relative(chartsDir, p), readFileSync(p, 'utf8')] as const),
    );
    const stale = [...expected].filter(([p, c]) => committed.get(p) !== c).map(([p]) => p);
    const extra = [...committed.keys()].filter((p) => !expected.has(p));
    expect({ stale, extra }, 'charts/ differs from src/install: run npm run charts').toEqual({
      stale: [],
      extra: [],
    });
  });

  it('helm lint passes for both charts', async () => {
    for (const chart of ['tether-hub', 'tether-agent']) {
      const { stdout } = await runHelm(helm, ['lint', '--strict', join(chartsDir, chart)], { home });
      expect(stdout).toContain('0 chart(s) failed');
    }
  });
});

describe('tether-hub chart', () => {
  const values = (type: AgentEndpointType, agentCa: string, clusterProxyServer?: string) => ({
    image: 'registry.example/tether:1.2.3',
    imagePullPolicy: 'Always',
    replicas: 3,
    agentEndpoint: { type, nodePort: 30555 },
    proxyServerHosts: ['hub.example.com', '192.0.2.10'],
    agentCa,
    ...(clusterProxyServer ? { clusterProxyServer } : {}),
  });
  // every agent endpoint type, without and (once) with the cluster-proxy addon's endpoint
  const cases: Array<[AgentEndpointType, string | undefined]> = [
    ...agentEndpointTypes.map((t): [AgentEndpointType, undefined] => [t, undefined]),
    ['NodePort', 'hub.example.com:30555'],
  ];

  it.each(cases)(
    'renders what tether init applies (agent endpoint %s, cluster-proxy at %s)',
    async (type, clusterProxyServer) => {
      const agentCa = (await createCertificateAuthority('hub-client-ca')).certPem;
      const v = values(type, agentCa, clusterProxyServer);
      const rendered = await template('tether-hub', v);
      const pki = await hubPki({
        proxyServerHosts: v.proxyServerHosts,
        agentCaPem: agentCa,
        lookup: async () => undefined,
      });
      const expected = byKey([
        ...crdObjects(hubCrdManifests()),
        ...hubAdmissionObjects(),
        ...placementAdmissionObjects(),
        ...addonConfigAdmissionObjects(),
        ...bootstrapIdentityObjects(),
        ...pki.objects,
        ...hubManifests({
          image: v.image,
          imagePullPolicy: 'Always',
          replicas: 3,
          agentEndpoint: v.agentEndpoint,
          gatewayCaBundle: pki.gatewayCaBundle,
          ...(clusterProxyServer ? { clusterProxyServer } : {}),
        }),
      ]);
      expect([...rendered.keys()].sort()).toEqual([...expected.keys()].sort());
      for (const [k, want] of expected) {
        const got = rendered.get(k) as Obj;
        if (want.kind === 'Secret') {
          // Helm generates its own certificates: same Secret, same keys, other data
          const { stringData, ...meta } = want;
          const { data, ...gotMeta } = got;
          expect(gotMeta, k).toEqual(meta);
          expect(Object.keys(data ?? {}).sort(), k).toEqual(Object.keys(stringData ?? {}).sort());
        } else if (want.kind === 'APIService') {
          expect({ ...got.spec, caBundle: 'x' }, k).toEqual({ ...want.spec, caBundle: 'x' });
          expect({ ...got, spec: undefined }).toEqual({ ...want, spec: undefined });
        } else expect(got, k).toEqual(want);
      }
      // the certificates fit together: serving certificates from their CAs, the SANs agents dial,
      // the APIService trusting the gateway's CA
      const pem = (name: string, item: string): string =>
        Buffer.from(
          rendered.get(`Secret open-cluster-management-hub/${name}`)?.data?.[item] ?? '',
          'base64',
        ).toString();
      const serverCa = new X509Certificate(pem(hubNames.proxyServerCa, 'ca.crt'));
      const serving = new X509Certificate(pem(hubNames.proxyServerTls, 'tls.crt'));
      expect(serving.verify(serverCa.publicKey)).toBe(true);
      expect(serving.subjectAltName).toContain('DNS:hub.example.com');
      expect(serving.subjectAltName).toContain('IP Address:192.0.2.10');
      expect(serving.subjectAltName).toContain(
        'DNS:tether-proxy-server-agents.open-cluster-management-hub.svc',
      );
      const clientCa = new X509Certificate(pem(hubNames.proxyClientCa, 'ca.crt'));
      const connect = new X509Certificate(pem(hubNames.gatewayConnect, 'tls.crt'));
      expect(connect.verify(clientCa.publicKey)).toBe(true);
      expect(connect.subject).toContain('CN=system:tether:gateway');
      expect(connect.verify(serverCa.publicKey)).toBe(false);
      const gatewayCa = new X509Certificate(pem(hubNames.gatewayTls, 'ca.crt'));
      expect(new X509Certificate(pem(hubNames.gatewayTls, 'tls.crt')).verify(gatewayCa.publicKey)).toBe(true);
      const apiService = [...rendered.values()].find((o) => o.kind === 'APIService');
      expect(Buffer.from(String(apiService?.spec?.caBundle), 'base64').toString()).toBe(
        pem(hubNames.gatewayTls, 'ca.crt'),
      );
    },
  );

  it('refuses to render without the CA that signs agents when it cannot read the hub', async () => {
    await expect(template('tether-hub', { agentCa: '' })).rejects.toThrow(/agentCa: no CA that signs agents/);
  });

  it('rejects an agent endpoint type tether init does not know', async () => {
    await expect(
      template('tether-hub', { agentCa: 'x', agentEndpoint: { type: 'Ingress' } }),
    ).rejects.toThrow(/agentEndpoint\/type.*must be one of/);
  });
});

describe('tether-agent chart', () => {
  const pem = (what: string) => `-----BEGIN CERTIFICATE-----\n${what}\n-----END CERTIFICATE-----\n`;
  const base = {
    clusterName: 'cluster-a',
    image: 'registry.example/tether:1.2.3',
    imagePullPolicy: 'Never' as const,
    bootstrapHubKubeconfig:
      'apiVersion: v1\nkind: Config\nclusters: []\n# "quoted" {{ braces }} and a % sign\n',
  };
  const combos = [0, 1, 2, 3, 4, 5, 6, 7].map((bits) => ({
    tunnel: Boolean(bits & 1),
    proxyCa: Boolean(bits & 2),
    proxyUrl: Boolean(bits & 4),
  }));

  it.each(combos)(
    'renders what tether join applies (tunnel $tunnel, proxy CA $proxyCa, proxy URL $proxyUrl)',
    async (c) => {
      const opts: AgentInstallOptions = {
        clusterName: base.clusterName,
        image: base.image,
        imagePullPolicy: base.imagePullPolicy,
        bootstrapKubeconfig: base.bootstrapHubKubeconfig,
        ...(c.tunnel
          ? { proxyServer: 'hub.example.com:31091', proxyServerCaPem: pem('proxy-server-ca') }
          : {}),
        ...(c.proxyCa ? { proxyCaPem: pem('forward-proxy-ca') } : {}),
        ...(c.proxyUrl ? { proxyUrl: 'https://squid.example:3129' } : {}),
        // the chart's default, as join's
        inProcessAddons: inProcessAddonNames,
      };
      const rendered = await template('tether-agent', {
        ...base,
        proxyServer: opts.proxyServer ?? '',
        proxyServerCa: opts.proxyServerCaPem ?? '',
        proxyCa: opts.proxyCaPem ?? '',
        proxyUrl: opts.proxyUrl ?? '',
      });
      const expected = byKey([...crdObjects(managedCrdManifests()), ...agentManifests(opts)]);
      expect([...rendered.keys()].sort()).toEqual([...expected.keys()].sort());
      for (const [k, want] of expected) expect(rendered.get(k), k).toEqual(want);
    },
  );

  it('says which value is missing instead of rendering a broken agent', async () => {
    await expect(template('tether-agent', { ...base, clusterName: '' })).rejects.toThrow(
      /clusterName is required/,
    );
    await expect(template('tether-agent', { ...base, bootstrapHubKubeconfig: '' })).rejects.toThrow(
      /bootstrapHubKubeconfig is required/,
    );
    await expect(template('tether-agent', { ...base, proxyServer: 'hub:31091' })).rejects.toThrow(
      /proxyServer and proxyServerCa go together/,
    );
  });
});
