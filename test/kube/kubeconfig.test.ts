import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RequestContext } from '@kubernetes/client-node';
import { ProxyAgent } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type InvalidKubeconfigError, isTetherError } from '../../src/errors.ts';
import { kubeconfigFromParts, kubeconfigToYaml, loadKubeconfig } from '../../src/kube/kubeconfig.ts';

const caPem = '-----BEGIN CERTIFICATE-----\nMIIBfakeCA\n-----END CERTIFICATE-----\n';
const certPem = '-----BEGIN CERTIFICATE-----\nMIIBfakeClient\n-----END CERTIFICATE-----\n';
const keyPem = '-----BEGIN EC PRIVATE KEY-----\nMHcfakeKey\n-----END EC PRIVATE KEY-----\n';
const b64 = (s: string) => Buffer.from(s).toString('base64');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tether-kubeconfig-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function write(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function kubeconfigYaml(opts: {
  server?: string;
  current?: string;
  user?: string;
  cluster?: string;
  extraCluster?: string;
  extraUser?: string;
}): string {
  return `apiVersion: v1
kind: Config
current-context: ${opts.current ?? 'hub'}
clusters:
- name: hub
  cluster:
    server: ${opts.server ?? 'https://127.0.0.1:6443'}
    certificate-authority-data: ${b64(caPem)}
${opts.extraCluster ?? ''}
users:
- name: admin
  user:
    client-certificate-data: ${b64(certPem)}
    client-key-data: ${b64(keyPem)}
${opts.extraUser ?? ''}
contexts:
- name: hub
  context:
    cluster: ${opts.cluster ?? 'hub'}
    user: ${opts.user ?? 'admin'}
- name: other
  context:
    cluster: hub
    user: admin
    namespace: open-cluster-management-agent
`;
}

function loadError(path: string, context?: string): InvalidKubeconfigError {
  try {
    loadKubeconfig(path, { context, proxyEnv: false });
  } catch (err) {
    expect(isTetherError(err, 'TETHER_INVALID_KUBECONFIG')).toBe(true);
    return err as InvalidKubeconfigError;
  }
  throw new Error(`loading ${path} did not fail`);
}

describe('loadKubeconfig rejects what cannot be used, naming the file and the problem', () => {
  it('a missing file', () => {
    const path = join(dir, 'nope.yaml');
    expect(loadError(path).message).toBe(`kubeconfig ${path}: file does not exist`);
  });

  it('an empty file', () => {
    expect(loadError(write('empty', '\n')).message).toMatch(/file is empty/);
  });

  it('a file that is not YAML', () => {
    expect(loadError(write('bad', 'clusters: [unclosed\n  - {')).message).toMatch(/cannot parse/);
  });

  it('a kubeconfig with a typo next to a token does not print or log that token', () => {
    // the error says where the typo is and quotes none of the file, not even through its cause
    const token = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
    const typo = loadError(write('typo', `users:\n- name: u\n  user:\n    token: ${token}\n   bad: [\n`));
    expect(typo.message).toMatch(/cannot parse: bad indentation of a mapping entry \(5:4\)$/);
    expect(JSON.stringify(typo, Object.getOwnPropertyNames(typo))).not.toContain(token.slice(0, 20));
    expect(typo.cause).toBeUndefined();
  });

  it('no current-context', () => {
    const path = write('k', kubeconfigYaml({}).replace('current-context: hub\n', ''));
    expect(loadError(path).message).toMatch(/no current-context/);
  });

  it('a current-context that is not defined', () => {
    expect(loadError(write('k', kubeconfigYaml({ current: 'ghost' }))).message).toMatch(
      /current-context "ghost" is not defined/,
    );
  });

  it('an unknown context asked for, listing the known ones', () => {
    expect(loadError(write('k', kubeconfigYaml({})), 'ghost').message).toMatch(
      /context "ghost" not found \(contexts: hub, other\)/,
    );
  });

  it('a context whose cluster or user is missing', () => {
    expect(loadError(write('k1', kubeconfigYaml({ cluster: 'nowhere' }))).message).toMatch(
      /names cluster "nowhere", not defined/,
    );
    expect(loadError(write('k2', kubeconfigYaml({ user: 'nobody' }))).message).toMatch(
      /names user "nobody", not defined/,
    );
  });

  it('a server that is not https', () => {
    expect(loadError(write('k', kubeconfigYaml({ server: 'http://127.0.0.1:8080' }))).message).toMatch(
      /server "http:\/\/127.0.0.1:8080" must be an https:\/\/ URL/,
    );
  });

  it('a client certificate file that is not there', () => {
    const path = write(
      'k',
      kubeconfigYaml({
        user: 'files',
        extraUser: '- name: files\n  user:\n    client-certificate: tls.crt\n    client-key: tls.key\n',
      }),
    );
    expect(loadError(path).message).toMatch(new RegExp(`client-certificate file ${join(dir, 'tls.crt')}`));
  });

  it('a certificate without its key', () => {
    const path = write(
      'k',
      kubeconfigYaml({
        user: 'half',
        extraUser: `- name: half\n  user:\n    client-certificate-data: ${b64(certPem)}\n`,
      }),
    );
    expect(loadError(path).message).toMatch(/certificate or key but not both/);
  });
});

describe('loadKubeconfig', () => {
  it('resolves certificate files relative to the kubeconfig and honours a chosen context', () => {
    write('tls.crt', certPem);
    write('tls.key', keyPem);
    const path = write(
      'k',
      kubeconfigYaml({
        user: 'files',
        extraUser: '- name: files\n  user:\n    client-certificate: tls.crt\n    client-key: tls.key\n',
      }),
    );
    const kc = loadKubeconfig(path, { proxyEnv: false });
    expect(kc.getCurrentUser()?.certFile).toBe(join(dir, 'tls.crt'));
    const other = loadKubeconfig(write('k2', kubeconfigYaml({})), { context: 'other', proxyEnv: false });
    expect(other.getCurrentContext()).toBe('other');
  });

  it('keeps proxy-url and tls-server-name, and client-node dials through that proxy with that name', async () => {
    const path = write(
      'k',
      kubeconfigYaml({}).replace(
        'server: https://127.0.0.1:6443',
        'server: https://hub.example:6443\n    proxy-url: http://squid.local:3128\n    tls-server-name: kubernetes.default.svc',
      ),
    );
    const kc = loadKubeconfig(path, { proxyEnv: { HTTPS_PROXY: 'http://ignored:1' } });
    const cluster = kc.getCurrentCluster();
    expect(cluster?.proxyUrl).toBe('http://squid.local:3128');
    expect(cluster?.tlsServerName).toBe('kubernetes.default.svc');
    const ctx = new RequestContext('https://hub.example:6443/api', 'GET');
    await kc.applySecurityAuthentication(ctx);
    expect(ctx.getDispatcher()).toBeInstanceOf(ProxyAgent);
    const options = kc.createDispatcherOptions(cluster, { servername: 'kubernetes.default.svc' });
    expect(options).toMatchObject({
      type: 'proxy',
      uri: 'http://squid.local:3128',
      requestTls: { servername: 'kubernetes.default.svc' },
    });
    const wsOptions: { servername?: string } = {};
    await kc.applyToHTTPSOptions(wsOptions);
    expect(wsOptions.servername).toBe('kubernetes.default.svc');
  });

  it('takes HTTPS_PROXY from the environment unless NO_PROXY covers the server', () => {
    const path = write('k', kubeconfigYaml({ server: 'https://hub.example:6443' }));
    expect(
      loadKubeconfig(path, { proxyEnv: { HTTPS_PROXY: 'http://squid:3128' } }).getCurrentCluster()?.proxyUrl,
    ).toBe('http://squid:3128');
    expect(
      loadKubeconfig(path, {
        proxyEnv: { HTTPS_PROXY: 'http://squid:3128', NO_PROXY: '.example' },
      }).getCurrentCluster()?.proxyUrl,
    ).toBeUndefined();
    expect(loadKubeconfig(path, { proxyEnv: false }).getCurrentCluster()?.proxyUrl).toBeUndefined();
  });
});

describe('kubeconfigFromParts', () => {
  it('round-trips through YAML and loadKubeconfig', () => {
    const kc = kubeconfigFromParts({
      name: 'cluster1',
      server: 'https://hub.example:6443/',
      caPem,
      certPem,
      keyPem,
      proxyUrl: 'http://squid:3128',
      tlsServerName: 'hub.internal',
      namespace: 'open-cluster-management-agent',
    });
    const yaml = kubeconfigToYaml(kc);
    expect(yaml).toContain('proxy-url: http://squid:3128');
    expect(yaml).toContain('tls-server-name: hub.internal');
    expect(yaml).not.toContain('null');
    const loaded = loadKubeconfig(write('hub-kubeconfig', yaml), { proxyEnv: false });
    const cluster = loaded.getCurrentCluster();
    const user = loaded.getCurrentUser();
    expect(loaded.getCurrentContext()).toBe('cluster1');
    expect(cluster).toMatchObject({
      name: 'cluster1',
      server: 'https://hub.example:6443',
      proxyUrl: 'http://squid:3128',
      tlsServerName: 'hub.internal',
      skipTLSVerify: false,
    });
    expect(Buffer.from(cluster?.caData ?? '', 'base64').toString()).toBe(caPem);
    expect(Buffer.from(user?.certData ?? '', 'base64').toString()).toBe(certPem);
    expect(Buffer.from(user?.keyData ?? '', 'base64').toString()).toBe(keyPem);
    expect(loaded.getContextObject('cluster1')?.namespace).toBe('open-cluster-management-agent');
    expect(kubeconfigToYaml(loaded)).toBe(yaml);
  });

  it('writes a token user', () => {
    const yaml = kubeconfigToYaml(
      kubeconfigFromParts({ name: 'gw', server: 'https://10.0.0.1:443', caPem, token: 'abc.def' }),
    );
    const loaded = loadKubeconfig(write('k', yaml), { proxyEnv: false });
    expect(loaded.getCurrentUser()?.token).toBe('abc.def');
  });

  it('refuses parts that make no usable kubeconfig', () => {
    expect(() => kubeconfigFromParts({ name: 'x', server: 'http://a:1', caPem, token: 't' })).toThrow(
      /https/,
    );
    expect(() =>
      kubeconfigFromParts({ name: 'x', server: 'https://a:1', caPem: 'nope', token: 't' }),
    ).toThrow(/PEM/);
    expect(() => kubeconfigFromParts({ name: 'x', server: 'https://a:1', caPem, certPem })).toThrow(
      /together/,
    );
    expect(() => kubeconfigFromParts({ name: 'x', server: 'https://a:1', caPem })).toThrow(
      /certificate|token/,
    );
  });
});
