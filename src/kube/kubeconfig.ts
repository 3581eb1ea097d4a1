// Kubeconfig files in and out. Loads a kubeconfig into a client-node KubeConfig and rejects, with
// one InvalidKubeconfigError naming the file and the problem, anything we could not connect with:
// a missing or unparsable file, no current context, a context whose cluster or user is missing, a
// server that is not https, referenced certificate files that are not there. Builds kubeconfigs
// from PEM parts and writes them as YAML. Owns no connections: client-node does every request.
//
// Proxies: client-node 2.x honours a cluster's `proxy-url` (undici ProxyAgent, CONNECT for https)
// and `tls-server-name` (TLS servername, also through the proxy), but its own undici dispatcher
// ignores HTTPS_PROXY / NO_PROXY. loadKubeconfig therefore copies the environment's proxy into
// clusters that have no `proxy-url`, the way client-go picks it up, unless told not to.
import './dispatcher.ts'; // pooled connections for every KubeConfig (see dispatcher.ts)
import { accessSync, constants, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Cluster, type Context, KubeConfig, type User } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { errorMessage, InvalidArgumentError, InvalidKubeconfigError } from '../errors.ts';

/** Environment variables as process.env has them. */
export type ProxyEnv = Readonly<Record<string, string | undefined>>;

export interface LoadKubeconfigOptions {
  /** Use this context instead of the file's current-context. */
  context?: string;
  /**
   * Where HTTPS_PROXY / NO_PROXY come from for clusters without `proxy-url` (default process.env);
   * `false` keeps the file's clusters exactly as written (use that when copying a kubeconfig).
   */
  proxyEnv?: ProxyEnv | false;
}

/** Load and check a kubeconfig file; throws InvalidKubeconfigError saying what is wrong. */
export function loadKubeconfig(path: string, options: LoadKubeconfigOptions = {}): KubeConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const problem = code === 'ENOENT' ? 'file does not exist' : `cannot read file: ${errorMessage(err)}`;
    throw new InvalidKubeconfigError(path, problem, { cause: err });
  }
  if (text.trim() === '') throw new InvalidKubeconfigError(path, 'file is empty');
  const kc = new KubeConfig();
  try {
    kc.loadFromString(text);
  } catch (err) {
    throw new InvalidKubeconfigError(path, `cannot parse: ${errorMessage(err)}`, { cause: err });
  }
  kc.makePathsAbsolute(dirname(path));
  if (options.context !== undefined) {
    if (!kc.getContextObject(options.context)) {
      const known = kc.getContexts().map((c) => c.name);
      throw new InvalidKubeconfigError(
        path,
        `context "${options.context}" not found (contexts: ${known.join(', ') || 'none'})`,
      );
    }
    kc.setCurrentContext(options.context);
  }
  checkKubeconfig(kc, path);
  if (options.proxyEnv !== false) applyEnvProxy(kc, options.proxyEnv ?? process.env);
  return kc;
}

/**
 * Check that the current context of `kc` can be used to connect: context, cluster and user exist,
 * the server is https, the proxy URL (if any) is one client-node can use, files it names exist.
 * `source` names the kubeconfig in the error (a path, or a description).
 */
export function checkKubeconfig(kc: KubeConfig, source: string): void {
  const current = kc.getCurrentContext();
  if (!current) throw new InvalidKubeconfigError(source, 'no current-context set (pass a context name)');
  const context = kc.getContextObject(current);
  if (!context) throw new InvalidKubeconfigError(source, `current-context "${current}" is not defined`);
  const cluster = kc.getCluster(context.cluster);
  if (!cluster) {
    throw new InvalidKubeconfigError(
      source,
      `context "${current}" names cluster "${context.cluster}", not defined`,
    );
  }
  if (!context.user) throw new InvalidKubeconfigError(source, `context "${current}" names no user`);
  const user = kc.getUser(context.user);
  if (!user) {
    throw new InvalidKubeconfigError(
      source,
      `context "${current}" names user "${context.user}", not defined`,
    );
  }
  checkServerUrl(
    cluster.server,
    (problem) => new InvalidKubeconfigError(source, `cluster "${cluster.name}": ${problem}`),
  );
  if (cluster.proxyUrl) {
    checkProxyUrl(
      cluster.proxyUrl,
      (p) => new InvalidKubeconfigError(source, `cluster "${cluster.name}": ${p}`),
    );
  }
  const hasCert = Boolean(user.certData || user.certFile);
  const hasKey = Boolean(user.keyData || user.keyFile);
  if (hasCert !== hasKey) {
    throw new InvalidKubeconfigError(
      source,
      `user "${user.name}" has a client certificate or key but not both`,
    );
  }
  for (const [what, file] of [
    ['certificate-authority', cluster.caFile],
    ['client-certificate', user.certFile],
    ['client-key', user.keyFile],
  ] as const) {
    if (!file) continue;
    try {
      accessSync(file, constants.R_OK);
    } catch (err) {
      throw new InvalidKubeconfigError(source, `${what} file ${file} cannot be read: ${errorMessage(err)}`, {
        cause: err,
      });
    }
  }
}

function checkServerUrl(server: string, fail: (problem: string) => Error): void {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw fail(`server "${server}" is not a URL`);
  }
  if (url.protocol !== 'https:') throw fail(`server "${server}" must be an https:// URL`);
}

function checkProxyUrl(proxyUrl: string, fail: (problem: string) => Error): void {
  let url: URL;
  try {
    url = new URL(proxyUrl);
  } catch {
    throw fail(`proxy-url "${proxyUrl}" is not a URL`);
  }
  if (!['http:', 'https:', 'socks5:', 'socks5h:', 'socks4:', 'socks4a:', 'socks:'].includes(url.protocol)) {
    throw fail(`proxy-url "${proxyUrl}" must be http://, https:// or socks5://`);
  }
}

/**
 * The proxy the environment asks for when dialling `server`, or undefined: HTTPS_PROXY (or
 * https_proxy) unless the host is loopback (as in Go's net/http) or NO_PROXY (or no_proxy) matches
 * it. NO_PROXY entries: `*`, a host or domain (`example.com` and `.example.com` both match
 * subdomains), an IP, an IPv4 CIDR, each with an optional `:port`.
 */
export function proxyUrlFromEnv(server: string, env: ProxyEnv): string | undefined {
  const proxy = env.HTTPS_PROXY || env.https_proxy;
  if (!proxy) return undefined;
  const url = new URL(server);
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  if (host === 'localhost' || host === '::1' || inCidr(host, '127.0.0.0/8')) return undefined;
  const noProxy = (env.NO_PROXY ?? env.no_proxy ?? '')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter(Boolean);
  for (const entry of noProxy) {
    if (noProxyMatches(entry, host, port)) return undefined;
  }
  return proxy;
}

function noProxyMatches(entry: string, host: string, port: string): boolean {
  if (entry === '*') return true;
  let pattern = entry;
  const withPort = /^(\[[^\]]+\]|[^:/]+):(\d+)$/.exec(entry);
  if (withPort) {
    if (withPort[2] !== port) return false;
    pattern = withPort[1]!;
  }
  pattern = pattern.replace(/^\[|\]$/g, '');
  if (pattern.includes('/')) return inCidr(host, pattern);
  if (pattern.startsWith('*.')) pattern = pattern.slice(2);
  else if (pattern.startsWith('.')) pattern = pattern.slice(1);
  return host === pattern || host.endsWith(`.${pattern}`);
}

function inCidr(host: string, cidr: string): boolean {
  const [base, bitsText] = cidr.split('/');
  const bits = Number(bitsText);
  const a = ipv4ToNumber(host);
  const b = ipv4ToNumber(base ?? '');
  if (a === undefined || b === undefined || !Number.isInteger(bits) || bits < 0 || bits > 32) return false;
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
  return (a & mask) >>> 0 === (b & mask) >>> 0;
}

function ipv4ToNumber(ip: string): number | undefined {
  const parts = ip.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) return undefined;
    n = n * 256 + Number(part);
  }
  return n;
}

/** Give every cluster without `proxy-url` the proxy the environment asks for (see proxyUrlFromEnv). */
export function applyEnvProxy(kc: KubeConfig, env: ProxyEnv = process.env): void {
  kc.clusters = kc.clusters.map((cluster) => {
    if (cluster.proxyUrl) return cluster;
    const proxyUrl = proxyUrlFromEnv(cluster.server, env);
    return proxyUrl ? { ...cluster, proxyUrl } : cluster;
  });
}

export interface KubeconfigParts {
  /** https://host:port of the kube-apiserver */
  server: string;
  /** PEM of the CA that signed the server's certificate */
  caPem: string;
  /** client certificate and key (PEM), for mTLS */
  certPem?: string;
  keyPem?: string;
  /** bearer token */
  token?: string;
  /** forward proxy, e.g. http://squid:3128 (written as `proxy-url`) */
  proxyUrl?: string;
  /** TLS server name to verify instead of the server URL's host (written as `tls-server-name`) */
  tlsServerName?: string;
  /** name of the cluster, user and context */
  name: string;
  /** default namespace of the context */
  namespace?: string;
}

/** A KubeConfig with one cluster, user and context named `name`, from PEM parts. */
export function kubeconfigFromParts(parts: KubeconfigParts): KubeConfig {
  const fail = (problem: string) => new InvalidArgumentError(`kubeconfig "${parts.name}": ${problem}`);
  if (!parts.name) throw fail('name is empty');
  checkServerUrl(parts.server, fail);
  if (parts.proxyUrl) checkProxyUrl(parts.proxyUrl, fail);
  if (!parts.caPem.includes('-----BEGIN CERTIFICATE-----')) throw fail('caPem is not a PEM certificate');
  if (Boolean(parts.certPem) !== Boolean(parts.keyPem)) throw fail('certPem and keyPem go together');
  if (!parts.certPem && !parts.token) throw fail('needs a client certificate (certPem + keyPem) or a token');
  const b64 = (pem: string) => Buffer.from(pem, 'utf8').toString('base64');
  const cluster: Cluster = {
    name: parts.name,
    server: parts.server.replace(/\/$/, ''),
    caData: b64(parts.caPem),
    skipTLSVerify: false,
    ...(parts.proxyUrl ? { proxyUrl: parts.proxyUrl } : {}),
    ...(parts.tlsServerName ? { tlsServerName: parts.tlsServerName } : {}),
  };
  const user: User = {
    name: parts.name,
    ...(parts.certPem ? { certData: b64(parts.certPem) } : {}),
    ...(parts.keyPem ? { keyData: b64(parts.keyPem) } : {}),
    ...(parts.token ? { token: parts.token } : {}),
  };
  const context: Context = {
    name: parts.name,
    cluster: parts.name,
    user: parts.name,
    ...(parts.namespace ? { namespace: parts.namespace } : {}),
  };
  const kc = new KubeConfig();
  kc.loadFromOptions({ clusters: [cluster], users: [user], contexts: [context], currentContext: parts.name });
  return kc;
}

/** The kubeconfig YAML kubectl and client-go read, for every cluster, user and context in `kc`. */
export function kubeconfigToYaml(kc: KubeConfig): string {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: kc.getClusters().map((c) => ({
      name: c.name,
      cluster: compact({
        server: c.server,
        'certificate-authority-data': c.caData,
        'certificate-authority': c.caFile,
        'insecure-skip-tls-verify': c.skipTLSVerify ? true : undefined,
        'tls-server-name': c.tlsServerName,
        'proxy-url': c.proxyUrl,
      }),
    })),
    users: kc.getUsers().map((u) => ({
      name: u.name,
      user: compact({
        'client-certificate-data': u.certData,
        'client-certificate': u.certFile,
        'client-key-data': u.keyData,
        'client-key': u.keyFile,
        token: u.token,
        username: u.username,
        password: u.password,
        as: u.impersonateUser,
        exec: u.exec,
        'auth-provider': u.authProvider,
      }),
    })),
    contexts: kc.getContexts().map((c) => ({
      name: c.name,
      context: compact({ cluster: c.cluster, user: c.user, namespace: c.namespace }),
    })),
    'current-context': kc.getCurrentContext() ?? '',
    preferences: {},
  };
  return stringify(config, { lineWidth: 0 });
}

/** client-node fills absent fields with null; a written kubeconfig leaves them out. */
function compact(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (value !== undefined && value !== null && value !== '') out[key] = value;
  }
  return out;
}
