// Pure pieces of the gateway: selectors, request-header identity, header rewriting for upstream
// requests, routing of API paths, Table negotiation, kubeconfig rewriting and error mapping.
import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { TetherError } from '../../src/errors.ts';
import { forbiddenMessage, verbForMethod, verbForProxyRequest } from '../../src/gateway/authorizer.ts';
import { consoleRouteOf } from '../../src/gateway/console.ts';
import { callerFromHeaders, parseAuthenticationConfigMap } from '../../src/gateway/front-proxy.ts';
import { gatewayKubeconfig, kubeConfigForCluster } from '../../src/gateway/kubeconfig.ts';
import { longRunningKind, upstreamHeaders } from '../../src/gateway/proxy.ts';
import { gatewayManagedClusterRbac, hubUserManagedClusterRbac } from '../../src/gateway/rbac.ts';
import { wantsTable } from '../../src/gateway/resources.ts';
import { parseFieldSelector, parseLabelSelector } from '../../src/gateway/selectors.ts';
import { routeOf } from '../../src/gateway/server.ts';
import { statusForUpstreamError } from '../../src/gateway/status.ts';
import type { Upstream } from '../../src/gateway/store.ts';
import { connectAuthority } from '../../src/tunnel/connect-authority.ts';

const caPem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const config = parseAuthenticationConfigMap({
  'requestheader-client-ca-file': caPem,
  'requestheader-allowed-names': '["front-proxy-client"]',
  'requestheader-username-headers': '["X-Remote-User"]',
  'requestheader-group-headers': '["X-Remote-Group"]',
  'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
})!;

describe('label and field selectors', () => {
  const labels = { env: 'prod', tier: 'web' };
  it.each([
    ['env=prod', true],
    ['env==prod,tier=web', true],
    ['env!=prod', false],
    ['env in (dev, prod)', true],
    ['env notin (prod)', false],
    ['tier', true],
    ['!tier', false],
    ['missing', false],
    ['!missing', true],
    ['', true],
  ])('%s → %s', (selector, expected) => {
    expect(parseLabelSelector(selector)(labels, 'x')).toBe(expected);
  });
  it('rejects malformed keys and fields other than metadata.name', () => {
    expect(() => parseLabelSelector('bad key=x')).toThrow(/invalid label selector/);
    expect(() => parseFieldSelector('spec.provider=x')).toThrow(/only metadata.name/);
    expect(parseFieldSelector('metadata.name=a')(undefined, 'a')).toBe(true);
    expect(parseFieldSelector('metadata.name!=a')(undefined, 'a')).toBe(false);
  });
});

describe('front-proxy identity', () => {
  it('reads user, repeated groups and percent-decoded extras like the apiserver', () => {
    const caller = callerFromHeaders(
      {
        'x-remote-user': ['alice'],
        'x-remote-group': ['devs', 'system:authenticated'],
        'x-remote-extra-scopes%2fa': ['read', 'write'],
        'x-unrelated': ['1'],
      },
      config,
    );
    expect(caller).toEqual({
      user: 'alice',
      groups: ['devs', 'system:authenticated'],
      extra: { 'scopes/a': ['read', 'write'] },
    });
    expect(callerFromHeaders({ 'x-remote-group': ['devs'] }, config)).toBeUndefined();
    expect(config.allowedNames).toEqual(['front-proxy-client']);
    expect(parseAuthenticationConfigMap({})).toBeUndefined();
  });
});

describe('upstream request headers', () => {
  const up: Upstream = {
    cluster: 'c1',
    endpointType: 'ClusterProxy',
    url: new URL('https://c1.example:6443'),
    caPem,
    credential: { type: 'ServiceAccountToken', token: 'msa-token' },
    impersonate: false,
  };
  const identity = { names: new Set(['x-remote-user', 'x-remote-group']), prefixes: ['x-remote-extra-'] };
  const incoming = {
    authorization: ['Bearer caller'],
    'impersonate-user': ['mallory'],
    'x-remote-user': ['alice'],
    'x-remote-extra-k': ['v'],
    connection: ['keep-alive, x-hop'],
    'x-hop': ['1'],
    'keep-alive': ['timeout=5'],
    host: ['hub'],
    accept: ['application/json'],
    'content-type': ['application/apply-patch+yaml'],
  };
  const caller = { user: 'alice', groups: ['devs', 'ops'], extra: { 'scopes/a': ['r'] } };

  it('drops credentials, identity and hop-by-hop headers and adds the cluster token (shared mode)', () => {
    expect(upstreamHeaders(incoming, up, caller, { identityMode: 'shared', identity }, false)).toEqual({
      accept: 'application/json',
      'content-type': 'application/apply-patch+yaml',
      authorization: 'Bearer msa-token',
    });
  });

  it('a hub caller acts on the managed cluster as cluster:hub:<user> in cluster:hub:<group>s, extras dropped', () => {
    const h = upstreamHeaders(
      incoming,
      up,
      { ...caller, groups: ['devs', 'system:masters', 'devs'] },
      { identityMode: 'impersonate', identity },
      false,
    );
    expect(h['impersonate-user']).toBe('cluster:hub:alice');
    expect(h['impersonate-group']).toEqual(['cluster:hub:devs', 'cluster:hub:system:masters']);
    expect(Object.keys(h).filter((k) => k.startsWith('impersonate-extra-'))).toEqual([]);
    expect(h.authorization).toBe('Bearer msa-token');
  });

  it('a ClusterGateway that asks for impersonation gets it in shared mode too', () => {
    const h = upstreamHeaders(
      incoming,
      { ...up, impersonate: true },
      caller,
      { identityMode: 'shared', identity },
      false,
    );
    expect(h['impersonate-user']).toBe('cluster:hub:alice');
    expect(h['impersonate-group']).toEqual(['cluster:hub:devs', 'cluster:hub:ops']);
  });

  it('keeps Connection/Upgrade for upgrades and sends no token for client-certificate clusters', () => {
    const x509: Upstream = { ...up, credential: { type: 'X509Certificate', certPem: 'c', keyPem: 'k' } };
    const h = upstreamHeaders(
      { ...incoming, upgrade: ['SPDY/3.1'] },
      x509,
      caller,
      { identityMode: 'shared', identity },
      true,
    );
    expect(h.connection).toBe('Upgrade');
    expect(h.upgrade).toBe('SPDY/3.1');
    expect(h.authorization).toBeUndefined();
  });

  it('tells long-running requests apart', () => {
    expect(longRunningKind('GET', '/api/v1/pods', new URLSearchParams('watch=true'))).toBe('watch');
    expect(longRunningKind('GET', '/api/v1/watch/pods', new URLSearchParams())).toBe('watch');
    expect(
      longRunningKind('GET', '/api/v1/namespaces/a/pods/p/log', new URLSearchParams('follow=true')),
    ).toBe('follow');
    expect(longRunningKind('GET', '/api/v1/pods', new URLSearchParams())).toBeUndefined();
  });
});

describe('routing and negotiation', () => {
  const base = '/apis/cluster.core.oam.dev/v1alpha1';
  it('maps paths to list, watch, get, health and proxy (raw rest path kept)', () => {
    const q = new URLSearchParams();
    expect(routeOf(`${base}/clustergateways`, q)).toEqual({ kind: 'list' });
    expect(routeOf(`${base}/clustergateways`, new URLSearchParams('watch=1'))).toEqual({ kind: 'watch' });
    expect(routeOf(`${base}/watch/clustergateways/c1`, q)).toEqual({ kind: 'watch', name: 'c1' });
    expect(routeOf(`${base}/clustergateways/c1`, q)).toEqual({ kind: 'get', name: 'c1' });
    expect(routeOf(`${base}/clustergateways/c1/health`, q)).toEqual({ kind: 'health', name: 'c1' });
    expect(routeOf(`${base}/clustergateways/c1/proxy`, q)).toEqual({ kind: 'proxy', name: 'c1', rest: '/' });
    expect(routeOf(`${base}/clustergateways/c1/proxy/api/v1/namespaces/a%2Fb`, q)).toEqual({
      kind: 'proxy',
      name: 'c1',
      rest: '/api/v1/namespaces/a%2Fb',
    });
    expect(routeOf(`${base}/other`, q)).toBeUndefined();
    expect(routeOf('/apis', q)).toBeUndefined();
  });

  it('maps the tunnel subresource, and the console files with what the apiserver authorizes them as', () => {
    const q = new URLSearchParams('watch=1');
    expect(routeOf(`${base}/clustergateways/c1/tunnel`, q)).toEqual({ kind: 'tunnel', name: 'c1' });
    expect(routeOf(`${base}/clustergateways/c1/tunnel/x`, q)).toBeUndefined();
    expect(routeOf(`${base}/console/`, q)).toBeUndefined();
    const list = { verb: 'list', resource: 'console' };
    expect(consoleRouteOf(`${base}/console/`)).toEqual({ file: 'index', access: list });
    expect(consoleRouteOf(`${base}/console`)).toEqual({ file: 'index-bare', access: list });
    expect(consoleRouteOf(`${base}/console/app.js`)).toEqual({
      file: 'app.js',
      access: { verb: 'get', resource: 'console', name: 'app.js' },
    });
    expect(consoleRouteOf(`${base}/console/app.css`)?.file).toBe('app.css');
    expect(consoleRouteOf(`${base}/console/../clustergateways`)).toMatchObject({ file: 'missing' });
    expect(consoleRouteOf(`${base}/console/app.js/x`)).toMatchObject({
      file: 'missing',
      access: { verb: 'get', resource: 'console', name: 'app.js' },
    });
    expect(consoleRouteOf(`${base}/consoles/`)).toBeUndefined();
  });

  it('recognizes kubectl Table requests', () => {
    expect(
      wantsTable(
        'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
      ),
    ).toBe(true);
    expect(wantsTable('application/json')).toBe(false);
    expect(wantsTable(undefined)).toBe(false);
  });

  it('maps HTTP methods to verbs and words denials like the apiserver', () => {
    expect(['GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE'].map(verbForMethod)).toEqual([
      'get',
      'get',
      'get',
      'create',
      'update',
      'patch',
      'delete',
    ]);
  });

  it('an Upgrade needs create whatever its method; only self-subject review POSTs count as get', () => {
    expect(verbForProxyRequest('GET', '/api/v1/namespaces/a/pods/p/exec', true)).toBe('create');
    expect(verbForProxyRequest('POST', '/api/v1/namespaces/a/pods/p/portforward', true)).toBe('create');
    expect(verbForProxyRequest('GET', '/api/v1/namespaces/a/pods/p/exec', false)).toBe('get');
    for (const path of [
      '/apis/authentication.k8s.io/v1/selfsubjectreviews',
      '/apis/authentication.k8s.io/v1beta1/selfsubjectreviews',
      '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      '/apis/authorization.k8s.io/v1/selfsubjectrulesreviews',
    ]) {
      expect(verbForProxyRequest('POST', path, false)).toBe('get');
      expect(verbForProxyRequest('PUT', path, false)).toBe('update');
    }
    for (const path of [
      '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews/x',
      '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews/../../../api/v1/namespaces/a/pods',
      '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews%2F..%2F..',
      '/apis/authorization%2Ek8s.io/v1/selfsubjectaccessreviews',
      '//apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      '/api/v1/namespaces/a/secrets',
    ]) {
      expect(verbForProxyRequest('POST', path, false)).toBe('create');
    }
    expect(
      forbiddenMessage(
        { user: 'bob', groups: [], extra: {} },
        { verb: 'create', subresource: 'proxy', name: 'c1' },
      ),
    ).toBe(
      'clustergateways.cluster.core.oam.dev "c1" is forbidden: User "bob" cannot create resource "clustergateways/proxy" in API group "cluster.core.oam.dev" at the cluster scope',
    );
  });

  it('maps upstream failures to Status codes', () => {
    expect(statusForUpstreamError(new TetherError('TETHER_NO_AGENT', 'no agent'), 'c1').code).toBe(503);
    expect(statusForUpstreamError(new TetherError('TETHER_DIAL_TIMEOUT', 'slow'), 'c1').code).toBe(504);
    expect(statusForUpstreamError(new TetherError('TETHER_DIAL_FAILED', 'refused'), 'c1').code).toBe(502);
    expect(
      statusForUpstreamError(Object.assign(new Error('h'), { code: 'UND_ERR_HEADERS_TIMEOUT' }), 'c1'),
    ).toMatchObject({
      code: 504,
      reason: 'Timeout',
    });
  });

  it('maps dial targets to CONNECT authorities of the proxy-server frontend', () => {
    expect(connectAuthority('c1', 'kube-apiserver:443')).toBe('c1:443');
    expect(connectAuthority('c1', 'metrics:8443')).toBe('metrics.c1:8443');
  });
});

describe('gateway kubeconfigs', () => {
  const hubYaml = `apiVersion: v1
kind: Config
clusters:
- name: hub
  cluster:
    server: https://hub.example:6443/
    certificate-authority-data: ${Buffer.from(caPem).toString('base64')}
users:
- name: admin
  user:
    token: abc
contexts:
- name: hub
  context: { cluster: hub, user: admin, namespace: team-a }
current-context: hub
`;
  it('rewrites the server URL to the cluster proxy and keeps user and CA', () => {
    const out = parse(gatewayKubeconfig(hubYaml, 'cluster1'));
    expect(out['current-context']).toBe('cluster1');
    expect(out.clusters[0].cluster.server).toBe(
      'https://hub.example:6443/apis/cluster.core.oam.dev/v1alpha1/clustergateways/cluster1/proxy',
    );
    expect(out.clusters[0].cluster['certificate-authority-data']).toBe(Buffer.from(caPem).toString('base64'));
    expect(out.users[0].user.token).toBe('abc');
    expect(out.contexts[0].context.namespace).toBe('team-a');
    const kc = new KubeConfig();
    kc.loadFromString(hubYaml);
    expect(kubeConfigForCluster(kc, 'c2').getCurrentCluster()?.server).toMatch(/clustergateways\/c2\/proxy$/);
    expect(() => gatewayKubeconfig(hubYaml, 'Not_A_Name')).toThrow(/not a valid managed cluster name/);
  });
});

describe('the gateway RBAC on a managed cluster', () => {
  const subject = { namespace: 'open-cluster-management-agent-addon', serviceAccount: 'tether-gateway' };

  it("the gateway's ServiceAccount may only impersonate; only cluster:hub:system:masters is cluster-admin", () => {
    const objects = gatewayManagedClusterRbac(subject);
    const roles = objects.filter((o) => o.kind === 'ClusterRole') as Array<{ rules: unknown[] }>;
    expect(roles.map((r) => r.rules)).toEqual([
      [{ apiGroups: [''], resources: ['users', 'groups'], verbs: ['impersonate'] }],
    ]);
    const bindings = objects.filter((o) => o.kind === 'ClusterRoleBinding') as unknown as Array<{
      roleRef: { name: string };
      subjects: Array<{ kind: string; name: string }>;
    }>;
    expect(bindings.map((b) => [b.roleRef.name, b.subjects.map((s) => `${s.kind}/${s.name}`)])).toEqual([
      ['tether-gateway:impersonator', ['ServiceAccount/tether-gateway']],
      ['cluster-admin', ['Group/cluster:hub:system:masters']],
    ]);
    expect(gatewayManagedClusterRbac(subject, { hubAdmins: false })).toHaveLength(2);
  });

  it('shared mode binds cluster-admin to the ServiceAccount; a hub user is granted under its prefixed name', () => {
    const [shared] = gatewayManagedClusterRbac(subject, { identityMode: 'shared' }) as unknown as Array<{
      roleRef: { name: string };
    }>;
    expect(shared?.roleRef.name).toBe('cluster-admin');
    expect(hubUserManagedClusterRbac('alice', 'view')).toMatchObject({
      kind: 'ClusterRoleBinding',
      roleRef: { name: 'view' },
      subjects: [{ kind: 'User', name: 'cluster:hub:alice' }],
    });
  });
});
