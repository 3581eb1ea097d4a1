// What a proxy-agent may dial. By default only its cluster's kube-apiserver (logical target
// `kube-apiserver:443`); other services only when exported by name in the agent's configuration.
// Everything else is refused on that stream, so the hub cannot reach into the managed network.
import { InvalidArgumentError } from '../errors.ts';
import type { TargetResolver } from '../tunnel/agent-session.ts';
import { KUBE_APISERVER_TARGET } from '../tunnel/protocol.ts';

export interface HostPort {
  host: string;
  port: number;
}

/** Parses `host:port` (IPv6 in brackets). */
export function parseHostPort(value: string, what: string): HostPort {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[2]) : 0;
  if (!m || port < 1 || port > 65535)
    throw new InvalidArgumentError(`${what} must be host:port, got "${value}"`);
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port };
}

/** Parses `--export name=host:port`; the hub reaches it as `<name>:<port>` (same port). */
export function parseExport(spec: string): { name: string; target: HostPort } {
  const eq = spec.indexOf('=');
  const name = eq > 0 ? spec.slice(0, eq) : '';
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name) || name === KUBE_APISERVER_TARGET) {
    throw new InvalidArgumentError(
      `--export must be name=host:port with a DNS-label name other than ${KUBE_APISERVER_TARGET}, got "${spec}"`,
    );
  }
  return { name, target: parseHostPort(spec.slice(eq + 1), `--export ${name}`) };
}

export function targetPolicy(
  kubeApiserver: HostPort,
  exports: Array<{ name: string; target: HostPort }>,
): TargetResolver {
  const allowed = new Map<string, HostPort>();
  allowed.set(`${KUBE_APISERVER_TARGET}:443`, kubeApiserver);
  for (const e of exports) allowed.set(`${e.name}:${e.target.port}`, e.target);
  return (name, port) => allowed.get(`${name}:${port}`);
}
