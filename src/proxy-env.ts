// The one answer to "which forward proxy does the environment ask for when dialling this URL", for
// the tunnel (src/tunnel/forward-proxy.ts) and for every API client (src/kube/kubeconfig.ts). It is
// proxy-from-env's getProxyForUrl, so tether follows the npm ecosystem's rules exactly:
//   - the proxy comes from <scheme>_proxy, else all_proxy; lowercase before uppercase, and an empty
//     value counts as unset (https_proxy="" falls back to HTTPS_PROXY);
//   - no_proxy (else NO_PROXY) exempts a target: `*`; `host` (exactly that host); `.example.com` or
//     `*.example.com` (every name ending so); any entry with `:port` only for that port; IPv6 as
//     `[::1]`. There are no CIDR entries and no implicit exemptions: loopback (127.0.0.1, localhost,
//     [::1]) goes through the proxy unless no_proxy names it, as with curl and undici.
// Two additions: values are trimmed (blank = unset), and a proxy without a scheme means http://
// (as in curl and Go; proxy-from-env would borrow the target's scheme and talk TLS to a plain
// proxy). wss:/ws: targets resolve as https:/http:. An explicit proxy URL (a flag, kubeconfig
// `proxy-url`) is the caller's to prefer; this module only reads the environment.
import { getProxyForUrl } from 'proxy-from-env';

/** Environment variables as process.env has them. */
export type ProxyEnv = Readonly<Record<string, string | undefined>>;

/** http_proxy, https_proxy, all_proxy, no_proxy, … in either case. */
const PROXY_VARIABLE = /^[a-z0-9]+_proxy$/i;

/** The proxy-related variables of `env`, trimmed, with blank ones dropped and http:// defaulted. */
function proxyVariables(env: ProxyEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, raw] of Object.entries(env)) {
    const value = raw?.trim();
    if (!value || !PROXY_VARIABLE.test(name)) continue;
    out[name] = /no_proxy/i.test(name) || value.includes('://') ? value : `http://${value}`;
  }
  return out;
}

/** A proxy URL for logs and messages: scheme, host and port, never userinfo. */
export function describeProxy(url: URL | string): string {
  let parsed: URL;
  try {
    parsed = typeof url === 'string' ? new URL(url) : url;
  } catch {
    return String(url).replace(/\/\/[^/@]*@/, '//');
  }
  return `${parsed.protocol}//${parsed.host}`;
}

/**
 * The proxy URL (as written in the environment, credentials included) the environment asks for
 * when dialling `target`, or undefined for a direct connection. `env` defaults to process.env.
 */
export function proxyFromEnv(target: URL | string, env: ProxyEnv = process.env): string | undefined {
  let url: URL;
  try {
    url = new URL(String(target));
  } catch {
    return undefined;
  }
  if (url.protocol === 'wss:') url.protocol = 'https:';
  else if (url.protocol === 'ws:') url.protocol = 'http:';
  // proxy-from-env reads process.env at call time and takes no other source (package.json pins the
  // version for this); give it exactly the variables asked about for this synchronous call.
  const saved = process.env;
  process.env = proxyVariables(env);
  try {
    return getProxyForUrl(url.href) || undefined;
  } finally {
    process.env = saved;
  }
}
