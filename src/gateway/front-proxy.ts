// Authentication of the hub aggregator, the only client the gateway serves: its front-proxy client
// certificate must chain to the request-header CA and carry an allowed name; the caller it vouches
// for comes in X-Remote-User / X-Remote-Group / X-Remote-Extra-* (header names as configured).
// Everything is read from ConfigMap kube-system/extension-apiserver-authentication, kept current
// by an informer, so a rotated front-proxy CA is picked up without a restart.
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { KubeConfig } from '@kubernetes/client-node';
import { TetherError } from '../errors.ts';
import { configMapResource, Informer, type KubeObject, ResourceClient } from '../kube/index.ts';
import type { Logger } from '../log.ts';
import { connectionOf, distinctHeaders } from './http.ts';

export const authenticationConfigMapNamespace = 'kube-system';
export const authenticationConfigMapName = 'extension-apiserver-authentication';

export interface RequestHeaderConfig {
  clientCaPem: string;
  /** CNs the front-proxy certificate may have; empty = any certificate from the CA */
  allowedNames: string[];
  usernameHeaders: string[];
  groupHeaders: string[];
  extraHeaderPrefixes: string[];
}

/** Who the aggregator says is calling. */
export interface Caller {
  user: string;
  groups: string[];
  extra: Record<string, string[]>;
}

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

function jsonList(text: string | undefined): string[] {
  if (!text) return [];
  try {
    const v = JSON.parse(text) as unknown;
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && x !== '') : [];
  } catch {
    return [];
  }
}

/** The request-header settings in the ConfigMap's data; undefined when aggregation is not set up. */
export function parseAuthenticationConfigMap(
  data: Record<string, string> | undefined,
): RequestHeaderConfig | undefined {
  const clientCaPem = data?.['requestheader-client-ca-file'];
  if (!clientCaPem?.includes('BEGIN CERTIFICATE')) return undefined;
  return {
    clientCaPem,
    allowedNames: jsonList(data?.['requestheader-allowed-names']),
    usernameHeaders: jsonList(data?.['requestheader-username-headers']),
    groupHeaders: jsonList(data?.['requestheader-group-headers']),
    extraHeaderPrefixes: jsonList(data?.['requestheader-extra-headers-prefix']),
  };
}

/**
 * The caller named by the request headers (the way the apiserver's requestheader authenticator
 * reads them), or undefined when no username header is set.
 */
export function callerFromHeaders(
  headers: Record<string, string[] | undefined>,
  config: RequestHeaderConfig,
): Caller | undefined {
  let user = '';
  for (const h of config.usernameHeaders) {
    user = headers[h.toLowerCase()]?.find((v) => v !== '') ?? '';
    if (user) break;
  }
  if (!user) return undefined;
  const groups: string[] = [];
  for (const h of config.groupHeaders) groups.push(...(headers[h.toLowerCase()] ?? []));
  const extra: Record<string, string[]> = {};
  for (const prefix of config.extraHeaderPrefixes.map((p) => p.toLowerCase())) {
    for (const [name, values] of Object.entries(headers)) {
      if (!name.startsWith(prefix) || name.length === prefix.length || !values) continue;
      let key = name.slice(prefix.length);
      try {
        key = decodeURIComponent(key);
      } catch {}
      extra[key] = [...(extra[key] ?? []), ...values];
    }
  }
  return { user, groups, extra };
}

/** Every header that carries identity (stripped before anything is forwarded upstream). */
export function identityHeaderNames(config: RequestHeaderConfig | undefined): {
  names: Set<string>;
  prefixes: string[];
} {
  const names = new Set<string>(['x-remote-user', 'x-remote-group']);
  for (const h of [...(config?.usernameHeaders ?? []), ...(config?.groupHeaders ?? [])])
    names.add(h.toLowerCase());
  const prefixes = ['x-remote-extra-', ...(config?.extraHeaderPrefixes ?? []).map((p) => p.toLowerCase())];
  return { names, prefixes };
}

// The peer certificate of a connection cannot change once it is up (the gateway's server refuses
// TLS renegotiation, and TLS 1.3 has none), so its names are read once per connection, not per request.
const peerNames = new WeakMap<TLSSocket, string[]>();

/** The subject CNs of the client certificate of `socket` (read once per connection). */
export function peerCommonNames(socket: TLSSocket): string[] {
  let names = peerNames.get(socket);
  if (!names) {
    const cn = socket.getPeerCertificate()?.subject?.CN;
    names = Array.isArray(cn) ? cn : cn ? [cn] : [];
    peerNames.set(socket, names);
  }
  return names;
}

export type FrontProxyResult = { ok: true; caller: Caller | undefined } | { ok: false; reason: string };

export class FrontProxyAuthenticator {
  private readonly informer: Informer<ConfigMap>;
  private current: RequestHeaderConfig | undefined;
  private readonly onCaChange: (caPem: string) => void;
  private readonly log: Logger;

  constructor(opts: { hubKubeConfig: KubeConfig; log: Logger; onCaChange: (caPem: string) => void }) {
    this.log = opts.log;
    this.onCaChange = opts.onCaChange;
    this.informer = new Informer(new ResourceClient<ConfigMap>(opts.hubKubeConfig, configMapResource), {
      namespace: authenticationConfigMapNamespace,
      fieldSelector: `metadata.name=${authenticationConfigMapName}`,
      name: 'extension-apiserver-authentication',
      log: opts.log,
    });
    const apply = (cm: ConfigMap): void => this.apply(cm);
    this.informer.addHandlers({ add: apply, update: (_old, cm) => apply(cm) });
  }

  /** Loads the ConfigMap; fails when the hub is not set up for API aggregation. */
  async start(timeoutMs = 30_000): Promise<RequestHeaderConfig> {
    this.informer.start();
    await this.informer.waitForSync(timeoutMs);
    if (!this.current) {
      throw new TetherError(
        'TETHER_UNAUTHORIZED',
        `ConfigMap ${authenticationConfigMapNamespace}/${authenticationConfigMapName} has no requestheader-client-ca-file: ` +
          'start the hub kube-apiserver with --requestheader-client-ca-file and --proxy-client-cert-file, and let the gateway read that ConfigMap',
      );
    }
    return this.current;
  }

  async stop(): Promise<void> {
    await this.informer.stop();
  }

  get config(): RequestHeaderConfig | undefined {
    return this.current;
  }

  /** Checks the TLS client certificate, then reads the caller from the headers. */
  authenticate(req: IncomingMessage): FrontProxyResult {
    const config = this.current;
    if (!config) return { ok: false, reason: 'request-header authentication is not configured yet' };
    const socket = connectionOf(req);
    if (!socket.authorized) {
      return { ok: false, reason: 'a front-proxy client certificate from the request-header CA is required' };
    }
    if (config.allowedNames.length > 0) {
      const names = peerCommonNames(socket);
      if (!names.some((n) => config.allowedNames.includes(n))) {
        return {
          ok: false,
          reason: `client certificate CN ${names.join(',')} is not an allowed front-proxy name`,
        };
      }
    }
    return { ok: true, caller: callerFromHeaders(distinctHeaders(req), config) };
  }

  private apply(cm: ConfigMap): void {
    const next = parseAuthenticationConfigMap(cm.data);
    if (!next) {
      this.log.warn('extension-apiserver-authentication has no request-header CA; keeping the previous one');
      return;
    }
    const caChanged = next.clientCaPem !== this.current?.clientCaPem;
    this.current = next;
    if (caChanged) {
      this.log.info({ allowedNames: next.allowedNames }, 'front-proxy CA loaded');
      this.onCaChange(next.clientCaPem);
    }
  }
}
