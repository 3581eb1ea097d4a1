// Connection reuse and forward-proxy trust for every client-node request in the process.
//
// client-node 2.0.1 builds a new undici dispatcher for every request and every watch, so each call
// pays a TLS handshake (and, behind a forward proxy, a CONNECT) and leaves idle sockets behind; and
// it gives an https:// proxy no TLS settings of its own, so a proxy with a private CA cannot be
// trusted. We replace its (private) `createDispatcher` once, for all KubeConfigs: dispatchers are
// cached by their exact TLS/proxy settings (bounded), and `proxy` dispatchers get the proxy CA set
// with `setForwardProxyCa`. Everything else stays client-node's own behaviour.
import { createHash } from 'node:crypto';
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

function keyOf(opts: DispatcherOptions): string {
  const h = createHash('sha256');
  h.update(JSON.stringify({ opts, proxyCa: proxyCa ?? '' }));
  return h.digest('hex');
}

// HTTP/1.1 with keep-alive: undici 8 negotiates HTTP/2 with the apiserver by default, and its
// HTTP/2 session idle timeout surfaces as an uncaught InformationalError ("socket idle timeout").
function build(opts: DispatcherOptions): Dispatcher {
  if (opts.type === 'proxy') {
    return new ProxyAgent({
      uri: opts.uri ?? '',
      requestTls: opts.requestTls,
      connect: opts.connect,
      allowH2: false,
      ...(proxyCa ? { proxyTls: { ca: proxyCa } } : {}),
    });
  }
  return new Agent({ connect: opts.connect, allowH2: false });
}

const proto = KubeConfig.prototype as unknown as PatchableKubeConfig;
const original = proto.createDispatcher;
if (typeof original === 'function' && typeof proto.createDispatcherOptions === 'function') {
  proto.createDispatcher = function createCachedDispatcher(this: PatchableKubeConfig, cluster, agentOptions) {
    const opts = this.createDispatcherOptions(cluster, agentOptions);
    if (opts.type === 'none' || opts.type === 'socks') return original.call(this, cluster, agentOptions);
    const key = keyOf(opts);
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
