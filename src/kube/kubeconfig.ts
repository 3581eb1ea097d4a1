// Kubeconfig files in and out. Loads a kubeconfig into a client-node KubeConfig and rejects, with
// one InvalidKubeconfigError naming the file and the problem, anything we could not connect with:
// a missing or unparsable file, no current context, a context whose cluster or user is missing, a
// server that is not https, referenced certificate files that are not there. Builds kubeconfigs
// from PEM parts and writes them as YAML. Owns no connections: client-node does every request.
//
// Proxies: client-node 2.x honours a cluster's `proxy-url` (undici ProxyAgent, CONNECT for https)
// and `tls-server-name` (TLS servername, also through the proxy), but its own undici dispatcher
// ignores HTTPS_PROXY / NO_PROXY. loadKubeconfig therefore copies the environment's proxy into
// clusters that have no `proxy-url`, unless told not to, choosing it exactly as the tunnel does
// (src/proxy-env.ts).
import './dispatcher.ts'; // pooled connections for every KubeConfig (see dispatcher.ts)
import { accessSync, constants, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { type Cluster, type Context, KubeConfig, type User } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { errorMessage, InvalidArgumentError, InvalidKubeconfigError } from '../errors.ts';
import { describeProxy, type ProxyEnv, proxyFromEnv } from '../proxy-env.ts';

export type { ProxyEnv };

export interface LoadKubeconfigOptions {
  /** Use this context instead of the file's current-context. */
  context?: string;
  /**
   * Where HTTPS_PROXY / NO_PROXY come from for clusters without `proxy-url` (default process.env);
   * `false` keeps the file's clusters exactly as written (use that when copying a kubeconfig).
   */
  proxyEnv?: ProxyEnv | false;
}

/**
 * A kubeconfig's YAML as a KubeConfig, unchecked; `source` names it in the InvalidKubeconfigError.
 * The YAML parser quotes the lines around an error (and keeps the whole text on the error): only its
 * first line is kept, and no cause, so a token next to a typo is not printed or logged.
 */
export function parseKubeconfigYaml(text: string, source: string): KubeConfig {
  const kc = new KubeConfig();
  try {
    kc.loadFromString(text);
  } catch (err) {
    const reason = errorMessage(err).split('\n')[0]?.trim();
    throw new InvalidKubeconfigError(source, `cannot parse: ${reason}`);
  }
  return kc;
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
  const kc = parseKubeconfigYaml(text, path);
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
    throw fail(`proxy-url "${describeProxy(proxyUrl)}" is not a URL`);
  }
  if (!['http:', 'https:', 'socks5:', 'socks5h:', 'socks4:', 'socks4a:', 'socks:'].includes(url.protocol)) {
    throw fail(`proxy-url "${describeProxy(url)}" must be http://, https:// or socks5://`);
  }
}

/**
 * The proxy the environment asks for when dialling `server`, or undefined: proxyFromEnv
 * (src/proxy-env.ts), the same resolution the tunnel uses.
 */
export function proxyUrlFromEnv(server: string, env: ProxyEnv): string | undefined {
  return proxyFromEnv(server, env);
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
