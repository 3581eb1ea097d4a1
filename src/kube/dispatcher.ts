// Connection reuse and forward-proxy trust for every client-node request in the process.
//
// client-node 2.0.1 builds a new undici dispatcher for every request and every watch, so each call
// pays a TLS handshake (and, behind a forward proxy, a CONNECT) and leaves idle sockets behind; and
// it gives an https:// proxy no TLS settings of its own, so a proxy with a private CA cannot be
// trusted. We replace its (private) `createDispatcher` once, for all KubeConfigs: dispatchers are
// cached by their exact TLS/proxy settings (bounded), and `proxy` dispatchers get the proxy CA set
// with `setForwardProxyCa` — or, without one, the cluster's own `certificate-authority-data`, as Go
// clients use it for the proxy hop too (this is how `clusteradm join --proxy-ca-file` writes a
// bootstrap kubeconfig: the proxy's CA appended to the hub's). Everything else stays client-node's.
//
// Per-request and per-connection costs (issue 14): the cache key of a KubeConfig is computed once
// per credential (the settings are compared byte for byte with the last ones it asked for, which
// is far cheaper than hashing them), and each dispatcher builds ONE TLS secure context (CA, client
// certificate and key parsed once) that all its connections share, instead of one per connection.
// A changed credential (a rotated client certificate, a new CA, whether it came from a file, the
// kubeconfig data or an exec plugin) changes the settings, hence the key: a new dispatcher with a
// new context; the old one is closed once it falls out of the cache.
import { createHash } from 'node:crypto';
import { createSecureContext, getCACertificates, type SecureContext } from 'node:tls';
import { KubeConfig } from '@kubernetes/client-node';
import { Agent, type Dispatcher, ProxyAgent } from 'undici';

interface DispatcherOptions {
  type: 'proxy' | 'socks' | 'agent' | 'none';
  uri?: string;
  requestTls?: Record<string, unknown>;
  connect?: Record<string, unknown>;
}

interface PatchableKubeConfig {
  createDispatcher(cluster: unknown, agentOptions: unknown): Dispatcher | undefined;
  createDispatcherOptions(cluster: unknown, agentOptions: unknown): DispatcherOptions;
}

/** Distinct TLS/proxy settings kept at once; the least recently used is closed beyond this. */
export const MAX_CACHED_DISPATCHERS = 256;

const cache = new Map<string, Dispatcher>();
let proxyCa: string | undefined;

/** The settings a dispatcher is built from, flat, in client-node's (stable) order. */
function settingsOf(opts: DispatcherOptions): unknown[] {
  const parts: unknown[] = [opts.type, opts.uri, proxyCa];
  for (const group of [opts.requestTls, opts.connect]) {
    parts.push('|');
    for (const [name, value] of Object.entries(group ?? {})) parts.push(name, value);
  }
  return parts;
}

function sameSetting(a: unknown, b: unknown): boolean {
  if (Buffer.isBuffer(a) || Buffer.isBuffer(b))
    return Buffer.isBuffer(a) && Buffer.isBuffer(b) && a.equals(b);
  return a === b;
}

function sameSettings(a: unknown[], b: unknown[]): boolean {
  return a.length === b.length && a.every((v, i) => sameSetting(v, b[i]));
}

/** sha256 over every setting, each tagged with its type and length so that no two lists collide. */
function keyOf(settings: unknown[]): string {
  const h = createHash('sha256');
  for (const value of settings) {
    if (Buffer.isBuffer(value)) {
      h.update(`b${value.length}:`);
      h.update(value);
    } else if (typeof value === 'string') {
      h.update(`s${Buffer.byteLength(value)}:${value}`);
    } else {
      const text = JSON.stringify(value) ?? 'undefined';
      h.update(`j${Buffer.byteLength(text)}:${text}`);
    }
  }
  return h.digest('hex');
}

interface KeyMemo {
  settings: unknown[];
  key: string;
}

/** The last settings each KubeConfig asked for and their key: most requests repeat them. */
const keyMemo = new WeakMap<object, KeyMemo>();

function memoizedKeyOf(kubeconfig: object, opts: DispatcherOptions): string {
  const settings = settingsOf(opts);
  const memo = keyMemo.get(kubeconfig);
  if (memo && sameSettings(memo.settings, settings)) return memo.key;
  const key = keyOf(settings);
  keyMemo.set(kubeconfig, { settings, key });
  return key;
}

/** TLS options that make up a secure context (the rest are per-connection options). */
const CONTEXT_OPTIONS = ['ca', 'cert', 'key', 'pfx', 'passphrase'] as const;

let secureContextsBuilt = 0;

/**
 * `tls` with its CA, certificate and key replaced by one secure context built from them, which
 * every connection of the dispatcher shares. If they cannot be parsed, `tls` is returned as it is,
 * so that each connection fails the way it did before, with the TLS error saying why.
 */
function withSharedContext(tls: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!tls || !CONTEXT_OPTIONS.some((name) => tls[name] !== undefined)) return tls;
  const material: Record<string, unknown> = {};
  const rest: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(tls)) {
    if ((CONTEXT_OPTIONS as readonly string[]).includes(name)) material[name] = value;
    else rest[name] = value;
  }
  let secureContext: SecureContext;
  try {
    secureContext = createSecureContext(material);
  } catch {
    return tls;
  }
  secureContextsBuilt++;
  return { ...rest, secureContext };
}

/**
 * TLS to an https:// proxy: the proxy CA set for the process; else the cluster's CA bundle next to
 * Node's default CAs (a proxy with a public certificate keeps working); else Node's defaults.
 */
function proxyTlsOf(opts: DispatcherOptions): { proxyTls?: Record<string, unknown> } {
  if (proxyCa) return { proxyTls: withSharedContext({ ca: proxyCa }) };
  const clusterCa = opts.requestTls?.ca;
  if (clusterCa === undefined || !opts.uri?.startsWith('https:')) return {};
  return { proxyTls: withSharedContext({ ca: [clusterCa, ...getCACertificates('default')] }) };
}

// HTTP/1.1 with keep-alive: undici 8 negotiates HTTP/2 with the apiserver by default, and its
// HTTP/2 session idle timeout surfaces as an uncaught InformationalError ("socket idle timeout").
function build(opts: DispatcherOptions): Dispatcher {
  if (opts.type === 'proxy') {
    return new ProxyAgent({
      uri: opts.uri ?? '',
      requestTls: withSharedContext(opts.requestTls),
      connect: opts.connect,
      allowH2: false,
      ...proxyTlsOf(opts),
    });
  }
  return new Agent({ connect: withSharedContext(opts.connect), allowH2: false });
}

const proto = KubeConfig.prototype as unknown as PatchableKubeConfig;
const original = proto.createDispatcher;
if (typeof original === 'function' && typeof proto.createDispatcherOptions === 'function') {
  proto.createDispatcher = function createCachedDispatcher(this: PatchableKubeConfig, cluster, agentOptions) {
    const opts = this.createDispatcherOptions(cluster, agentOptions);
    if (opts.type === 'none' || opts.type === 'socks') return original.call(this, cluster, agentOptions);
    const key = memoizedKeyOf(this, opts);
    let d = cache.get(key);
    if (d) {
      cache.delete(key);
      cache.set(key, d);
      return d;
    }
    d = build(opts);
    cache.set(key, d);
    if (cache.size > MAX_CACHED_DISPATCHERS) {
      const [oldestKey, oldest] = cache.entries().next().value as [string, Dispatcher];
      cache.delete(oldestKey);
      void oldest.close().catch(() => {});
    }
    return d;
  };
}

/** Trust this CA bundle (PEM) for TLS to https:// forward proxies named by kubeconfig `proxy-url`. */
export function setForwardProxyCa(pem: string | undefined): void {
  proxyCa = pem;
}

/** Closes every cached dispatcher (idle sockets go away); later requests build new ones. */
export async function closeCachedDispatchers(): Promise<void> {
  const all = [...cache.values()];
  cache.clear();
  await Promise.all(all.map((d) => d.close().catch(() => {})));
}

/** For tests: how many distinct dispatchers are cached. */
export function cachedDispatcherCount(): number {
  return cache.size;
}

/** For tests: how many TLS secure contexts the cached dispatchers have built so far. */
export function secureContextCount(): number {
  return secureContextsBuilt;
}
