// Finding 9 of issue 10: the tunnel (proxy-agent → proxy-server) and the API clients (client-node
// through a loaded kubeconfig) each had their own reading of HTTPS_PROXY / NO_PROXY and disagreed on
// case precedence and loopback. Both now go through src/proxy-env.ts; this table pins every case to
// one expected proxy and checks that the tunnel dialer and client-node's dispatcher choose it.
import { describe, expect, it } from 'vitest';
import { applyEnvProxy, kubeconfigFromParts } from '../../src/kube/kubeconfig.ts';
import { proxyForUrl } from '../../src/tunnel/forward-proxy.ts';

const caPem = '-----BEGIN CERTIFICATE-----\nMIIBfakeCA\n-----END CERTIFICATE-----\n';
const UPPER = 'http://upper.proxy:3128';
const LOWER = 'http://lower.proxy:3128';
const P = 'http://squid.proxy:3128';

type Env = Record<string, string>;

/** What the tunnel dialer would CONNECT through for `target`, as a normalized URL string. */
function tunnelChoice(target: string, env: Env): string | undefined {
  return proxyForUrl(target, { env })?.href;
}

/** What client-node's dispatcher for a kubeconfig naming `target` would use, normalized the same way. */
function apiClientChoice(target: string, env: Env): string | undefined {
  const kc = kubeconfigFromParts({ name: 't', server: target, caPem, token: 'not-a-real-token' });
  applyEnvProxy(kc, env);
  const cluster = kc.getCurrentCluster();
  const options = kc.createDispatcherOptions(cluster, {}) as { type: string; uri?: string };
  if (options.type !== 'proxy') return undefined;
  return new URL(options.uri ?? '').href;
}

const href = (u: string | undefined) => (u === undefined ? undefined : new URL(u).href);

const cases: Array<[string, string, Env, string | undefined]> = [
  // what: target, environment, the proxy both must pick
  [
    'lowercase https_proxy over uppercase',
    'https://hub.example:6443',
    { HTTPS_PROXY: UPPER, https_proxy: LOWER },
    LOWER,
  ],
  [
    'uppercase when lowercase is empty',
    'https://hub.example:6443',
    { https_proxy: '', HTTPS_PROXY: UPPER },
    UPPER,
  ],
  ['blank values as unset', 'https://hub.example:6443', { HTTPS_PROXY: ' ', https_proxy: '' }, undefined],
  ['no proxy set', 'https://hub.example:6443', {}, undefined],
  [
    'lowercase no_proxy over uppercase',
    'https://hub.example:6443',
    { HTTPS_PROXY: P, NO_PROXY: 'hub.example', no_proxy: 'other.example' },
    P,
  ],
  [
    'uppercase NO_PROXY when no_proxy is empty',
    'https://hub.example:6443',
    { HTTPS_PROXY: P, no_proxy: '', NO_PROXY: 'hub.example' },
    undefined,
  ],
  ['an empty NO_PROXY', 'https://hub.example:6443', { HTTPS_PROXY: P, NO_PROXY: '' }, P],
  [
    'NO_PROXY naming the host',
    'https://hub.example:6443',
    { HTTPS_PROXY: P, NO_PROXY: 'other, hub.example' },
    undefined,
  ],
  [
    'NO_PROXY naming the host in other case',
    'https://Hub.Example:6443',
    { HTTPS_PROXY: P, NO_PROXY: 'HUB.example' },
    undefined,
  ],
  [
    'NO_PROXY with a .domain suffix',
    'https://hub.example:6443',
    { HTTPS_PROXY: P, NO_PROXY: '.example' },
    undefined,
  ],
  [
    'NO_PROXY with a *.domain suffix',
    'https://a.hub.example:6443',
    { HTTPS_PROXY: P, NO_PROXY: '*.example' },
    undefined,
  ],
  [
    'NO_PROXY with a bare parent domain (exact names only)',
    'https://hub.example:6443',
    { HTTPS_PROXY: P, NO_PROXY: 'example' },
    P,
  ],
  [
    'NO_PROXY with a suffix that is not a label boundary',
    'https://hubexample:6443',
    { HTTPS_PROXY: P, NO_PROXY: '.example' },
    P,
  ],
  ['NO_PROXY *', 'https://hub.example:6443', { HTTPS_PROXY: P, NO_PROXY: '*' }, undefined],
  [
    'NO_PROXY host:port on that port',
    'https://hub.example:6443',
    { HTTPS_PROXY: P, NO_PROXY: 'hub.example:6443' },
    undefined,
  ],
  [
    'NO_PROXY host:port on another port',
    'https://hub.example:6443',
    { HTTPS_PROXY: P, NO_PROXY: 'hub.example:443' },
    P,
  ],
  [
    'NO_PROXY :443 for a default-port target',
    'https://hub.example',
    { HTTPS_PROXY: P, NO_PROXY: 'hub.example:443' },
    undefined,
  ],
  ['loopback 127.0.0.1 without NO_PROXY', 'https://127.0.0.1:6443', { HTTPS_PROXY: P }, P],
  ['loopback localhost without NO_PROXY', 'https://localhost:6443', { HTTPS_PROXY: P }, P],
  ['loopback [::1] without NO_PROXY', 'https://[::1]:6443', { HTTPS_PROXY: P }, P],
  [
    '127.0.0.1 listed in NO_PROXY',
    'https://127.0.0.1:6443',
    { HTTPS_PROXY: P, NO_PROXY: 'localhost,127.0.0.1,[::1]' },
    undefined,
  ],
  [
    'localhost listed in NO_PROXY',
    'https://localhost:6443',
    { HTTPS_PROXY: P, NO_PROXY: 'localhost,127.0.0.1,[::1]' },
    undefined,
  ],
  [
    '[::1] listed in NO_PROXY',
    'https://[::1]:6443',
    { HTTPS_PROXY: P, NO_PROXY: 'localhost,127.0.0.1,[::1]' },
    undefined,
  ],
  [
    'an IPv6 target listed with its port',
    'https://[fd00::1]:6443',
    { HTTPS_PROXY: P, no_proxy: '[fd00::1]:6443' },
    undefined,
  ],
  ['a proxy without a scheme (http://)', 'https://hub.example:6443', { HTTPS_PROXY: 'squid.proxy:3128' }, P],
  [
    'a proxy with credentials',
    'https://hub.example:6443',
    { HTTPS_PROXY: 'http://alice:s3cret@squid.proxy:3128' },
    'http://alice:s3cret@squid.proxy:3128',
  ],
  ['HTTP_PROXY alone for an https target', 'https://hub.example:6443', { HTTP_PROXY: P }, undefined],
  ['ALL_PROXY for an https target', 'https://hub.example:6443', { ALL_PROXY: P }, P],
  ['HTTPS_PROXY over ALL_PROXY', 'https://hub.example:6443', { ALL_PROXY: UPPER, HTTPS_PROXY: P }, P],
];

describe('one forward-proxy resolution', () => {
  it.each(cases)('the tunnel and API clients pick the same proxy for %s', (_what, target, env, expected) => {
    const want = href(expected);
    expect({ tunnel: tunnelChoice(target, env), apiClient: apiClientChoice(target, env) }).toEqual({
      tunnel: want,
      apiClient: want,
    });
  });

  it('the tunnel picks the https proxy for wss:// hub addresses, like the API clients for https://', () => {
    const env = { https_proxy: LOWER, HTTPS_PROXY: UPPER, http_proxy: UPPER, no_proxy: 'other' };
    expect(tunnelChoice('wss://hub.example:8443', env)).toBe(
      apiClientChoice('https://hub.example:8443', env),
    );
    expect(tunnelChoice('wss://hub.example:8443', env)).toBe(href(LOWER));
  });

  it('an explicit proxy URL wins over the environment for the tunnel and for kubeconfig proxy-url', () => {
    const env = { HTTPS_PROXY: UPPER, NO_PROXY: '*' };
    expect(proxyForUrl('https://hub.example:6443', { proxyUrl: P, env })?.href).toBe(href(P));
    const kc = kubeconfigFromParts({
      name: 't',
      server: 'https://hub.example:6443',
      caPem,
      token: 'x',
      proxyUrl: P,
    });
    applyEnvProxy(kc, { HTTPS_PROXY: UPPER });
    expect(kc.getCurrentCluster()?.proxyUrl).toBe(P);
  });
});
