// A real squid forward proxy for `tether up` and tests: the HTTP CONNECT hop between agents and the
// hub. Owns one fresh directory (squid.conf, logs, htpasswd, TLS key) and one squid process in the
// foreground; stop() kills the process and removes the directory. Started by root, squid runs as
// the unprivileged proxy user from the start (not by dropping root itself, which would reset its
// parent-death signal), so it dies with us even on SIGKILL, and its directory is removed then too
// (dir-reaper.ts). Listens on 127.0.0.1, plus the extra addresses a caller names (the host ends of
// real nodes' veths, so pods reach it); by default it allows CONNECT to any host and port, and with
// `allowConnect` only to the listed address/port pairs (the one hole in a managed node's firewall
// must not lead anywhere else). It never touches the system squid's /etc/squid or /var/spool/squid.
import { execFileSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { ProcessFailedError, TetherError } from '../errors.ts';
import { pollUntil } from '../wait.ts';
import { removeWhenProcessEnds } from './dir-reaper.ts';
import { freePort, SupervisedProcess } from './process.ts';

const SQUID_CANDIDATES = ['/usr/sbin/squid', '/usr/local/sbin/squid'];
const NCSA_AUTH_CANDIDATES = ['/usr/lib/squid/basic_ncsa_auth', '/usr/lib64/squid/basic_ncsa_auth'];
/** squid refuses to run as root; started by root we run it as this user. */
const SQUID_USER = 'proxy';
const DEFAULT_READY_TIMEOUT_MS = 30_000;

export interface StartSquidOptions {
  /** parent directory for squid's own fresh directory (default: the OS temp dir) */
  dir?: string;
  /** serve the proxy over TLS (`https_port`): clients need the issuing CA to trust it */
  tls?: { certPem: string; keyPem: string };
  /** require Basic proxy authentication with exactly these credentials */
  basicAuth?: { username: string; password: string };
  /** CONNECT to these destination ports is denied with 403 (for refusal tests) */
  denyConnectPorts?: number[];
  /** IPv4 addresses squid also listens on (same port as on 127.0.0.1); each must exist on this host */
  listenAddresses?: string[];
  /**
   * Only CONNECT to these IPv4 addresses and ports (a port or an inclusive range) is allowed; any
   * other request is denied with 403. Without it every CONNECT is allowed.
   */
  allowConnect?: ConnectDestination[];
  /** deadline for squid to accept connections (ms); default 30 s */
  readyTimeoutMs?: number;
  /** abandons the start: squid is stopped and the promise rejects with the abort reason */
  signal?: AbortSignal;
}

/** Where CONNECT may go: one IPv4 address and a port or an inclusive port range. */
export interface ConnectDestination {
  address: string;
  ports: number | readonly [number, number];
}

export interface Squid {
  /** `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT`, without credentials */
  url: string;
  port: number;
  /** the same URL on one of `listenAddresses` (squid listens on the same port there) */
  urlOn(address: string): string;
  accessLogPath: string;
  /** Current contents of the access log ('' once stopped). CONNECTs are logged when the tunnel closes. */
  accessLog(): string;
  /** Terminates squid (about 2 s: its shutdown runs in one-second steps) and removes its directory; idempotent. */
  stop(): Promise<void>;
  /** the squid process (respawnable on the same port with the same directory) */
  process: SupervisedProcess;
}

function findExecutable(candidates: string[], what: string): string {
  const found = candidates.find((p) => existsSync(p));
  if (!found) {
    throw new TetherError(
      'TETHER_BINARY_NOT_FOUND',
      `${what} not found (looked at ${candidates.join(', ')}): install squid (apt-get install squid)`,
    );
  }
  return found;
}

/** uid/gid squid runs as when we are root (we hand it our files); undefined otherwise. */
function squidOwner(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
    const [name, , uid, gid] = line.split(':');
    if (name === SQUID_USER) return { uid: Number(uid), gid: Number(gid) };
  }
  throw new TetherError(
    'TETHER_INVALID_ARGUMENT',
    `squid drops root privileges to user "${SQUID_USER}", which does not exist: install squid from the distribution`,
  );
}

/** squid (as `owner`) must be able to enter `parent` and every directory above it. */
function checkTraversable(parent: string, owner: { uid: number; gid: number }): void {
  for (let d = parent; ; d = dirname(d)) {
    const st = statSync(d);
    const ok =
      st.uid === owner.uid ? st.mode & 0o100 : st.gid === owner.gid ? st.mode & 0o010 : st.mode & 0o001;
    if (!ok) {
      throw new TetherError(
        'TETHER_INVALID_ARGUMENT',
        `squid runs as user "${SQUID_USER}" and cannot enter ${d}: use a parent directory every user can traverse (chmod o+x ${d})`,
      );
    }
    if (d === dirname(d)) return;
  }
}

/** An htpasswd line basic_ncsa_auth accepts (APR1 MD5); the password goes to openssl on stdin. */
function htpasswdLine(username: string, password: string): string {
  if (!username || /[:\s]/.test(username)) {
    throw new TetherError(
      'TETHER_INVALID_ARGUMENT',
      'proxy username must be non-empty without ":" or spaces',
    );
  }
  if (/[\r\n]/.test(password)) {
    throw new TetherError('TETHER_INVALID_ARGUMENT', 'proxy password must not contain line breaks');
  }
  const hash = execFileSync('openssl', ['passwd', '-apr1', '-stdin'], { input: `${password}\n` })
    .toString()
    .trim();
  return `${username}:${hash}\n`;
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;

function isPort(p: number): boolean {
  return Number.isInteger(p) && p >= 1 && p <= 65535;
}

function checkOptions(opts: StartSquidOptions): void {
  for (const p of opts.denyConnectPorts ?? []) {
    if (!isPort(p)) {
      throw new TetherError('TETHER_INVALID_ARGUMENT', `denyConnectPorts: ${p} is not a TCP port`);
    }
  }
  for (const a of opts.listenAddresses ?? []) {
    if (!IPV4.test(a))
      throw new TetherError('TETHER_INVALID_ARGUMENT', `listenAddresses: ${a} is not an IPv4 address`);
  }
  for (const d of opts.allowConnect ?? []) {
    const [from, to] = typeof d.ports === 'number' ? [d.ports, d.ports] : d.ports;
    if (!IPV4.test(d.address) || !isPort(from) || !isPort(to) || from > to) {
      throw new TetherError(
        'TETHER_INVALID_ARGUMENT',
        `allowConnect: ${d.address}:${String(d.ports)} is not an IPv4 address with a TCP port or port range`,
      );
    }
  }
}

/** squid.conf for one local squid (exported for unit tests). */
export function squidConf(
  dir: string,
  port: number,
  opts: StartSquidOptions,
  files: { tlsCert?: string; tlsKey?: string; htpasswd?: string; ncsaAuth?: string },
): string {
  const addresses = ['127.0.0.1', ...(opts.listenAddresses ?? []).filter((a) => a !== '127.0.0.1')];
  const listen = addresses.map((a) =>
    files.tlsCert && files.tlsKey
      ? `https_port ${a}:${port} tls-cert=${files.tlsCert} tls-key=${files.tlsKey}`
      : `http_port ${a}:${port}`,
  );
  const lines = [
    '# written by tether (src/localenv/squid.ts) for one local squid; removed on stop',
    ...listen,
    'visible_hostname tether-squid',
    `cache_effective_user ${SQUID_USER}`,
    // no pid file: nothing signals squid through one, and a stale one (after a SIGKILL) could make a
    // restarted squid believe it is already running
    'pid_filename none',
    `access_log stdio:${join(dir, 'access.log')}`,
    `cache_log ${join(dir, 'cache.log')}`,
    'cache_store_log none',
    `coredump_dir ${dir}`,
    'netdb_filename none',
    'pinger_enable off',
    'logfile_rotate 0',
    // memory only, and nothing worth keeping: tunnels are opaque anyway
    'cache_mem 8 MB',
    'cache deny all',
    'shutdown_lifetime 0 seconds',
    'acl CONNECT method CONNECT',
  ];
  const denied = opts.denyConnectPorts ?? [];
  if (denied.length > 0) {
    lines.push(
      `acl tether_denied_ports port ${denied.join(' ')}`,
      'http_access deny CONNECT tether_denied_ports',
    );
  }
  if (files.htpasswd && files.ncsaAuth) {
    lines.push(
      `auth_param basic program ${files.ncsaAuth} ${files.htpasswd}`,
      'auth_param basic children 2 startup=1 idle=1',
      'auth_param basic realm tether',
      'acl tether_authenticated proxy_auth REQUIRED',
      // a denial on a proxy_auth ACL answers 407 (the challenge)
      'http_access deny !tether_authenticated',
    );
  }
  if (opts.allowConnect) {
    opts.allowConnect.forEach((d, i) => {
      const ports = typeof d.ports === 'number' ? `${d.ports}` : `${d.ports[0]}-${d.ports[1]}`;
      lines.push(
        `acl tether_to_${i} dst ${d.address}/32`,
        `acl tether_port_${i} port ${ports}`,
        `http_access allow CONNECT tether_to_${i} tether_port_${i}`,
      );
    });
    lines.push('http_access deny all');
  } else {
    lines.push('http_access allow all');
  }
  return `${lines.join('\n')}\n`;
}

function fileTail(path: string, lines: number): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

function acceptsConnections(port: number): Promise<boolean> {
  return new Promise((resolveConnect) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.setTimeout(1000);
    const done = (ok: boolean): void => {
      socket.destroy();
      resolveConnect(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

/** Starts squid in the foreground on a free loopback port and waits until it accepts connections. */
export async function startSquid(opts: StartSquidOptions = {}): Promise<Squid> {
  const squidPath = findExecutable(SQUID_CANDIDATES, 'squid');
  const ncsaAuth = opts.basicAuth ? findExecutable(NCSA_AUTH_CANDIDATES, 'basic_ncsa_auth') : undefined;
  checkOptions(opts);
  const parent = resolve(opts.dir ?? tmpdir());
  // squid.conf has no quoting for paths
  if (/\s/.test(parent))
    throw new TetherError('TETHER_INVALID_ARGUMENT', `squid directory "${parent}" contains spaces`);
  mkdirSync(parent, { recursive: true });
  const owner = squidOwner();
  if (owner) checkTraversable(parent, owner);
  const dir = mkdtempSync(join(parent, 'tether-squid-'));
  const reaper = removeWhenProcessEnds(dir);
  const accessLogPath = join(dir, 'access.log');
  const cacheLogPath = join(dir, 'cache.log');
  let proc: SupervisedProcess | undefined;
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await proc?.stop(5000);
    rmSync(dir, { recursive: true, force: true });
    reaper.release();
  };

  try {
    const files: { tlsCert?: string; tlsKey?: string; htpasswd?: string; ncsaAuth?: string } = {};
    if (opts.tls) {
      files.tlsCert = join(dir, 'proxy.crt');
      files.tlsKey = join(dir, 'proxy.key');
      writeFileSync(files.tlsCert, opts.tls.certPem, { mode: 0o644 });
      writeFileSync(files.tlsKey, opts.tls.keyPem, { mode: 0o600 });
    }
    if (opts.basicAuth) {
      files.htpasswd = join(dir, 'htpasswd');
      files.ncsaAuth = ncsaAuth;
      writeFileSync(files.htpasswd, htpasswdLine(opts.basicAuth.username, opts.basicAuth.password), {
        mode: 0o600,
      });
    }
    const port = await freePort();
    const confPath = join(dir, 'squid.conf');
    writeFileSync(confPath, squidConf(dir, port, opts, files), { mode: 0o644 });
    if (owner) {
      // squid runs as the proxy user and writes its logs here
      for (const f of [dir, confPath, files.tlsCert, files.tlsKey, files.htpasswd]) {
        if (f) chownSync(f, owner.uid, owner.gid);
      }
    }

    const squid = new SupervisedProcess({
      name: 'squid',
      command: squidPath,
      args: ['-N', '-f', confPath],
      logFile: join(dir, 'squid.out'),
      cwd: dir,
      user: owner,
    });
    proc = squid;
    const logTail = (): string => [squid.tail(10), fileTail(cacheLogPath, 15)].filter(Boolean).join('\n');
    const timeoutMs = opts.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
    const accepting = async (signal?: AbortSignal): Promise<void> => {
      const outcome = await pollUntil(
        async () => {
          if (!squid.running) return 'exited';
          return (await acceptsConnections(port)) && 'ready';
        },
        { timeoutMs, intervalMs: 100, description: `squid on 127.0.0.1:${port}`, signal },
      ).catch((err: unknown) => {
        if (signal?.aborted) throw err;
        throw new ProcessFailedError(
          `squid did not accept connections: ${(err as Error).message}`,
          logTail(),
        );
      });
      if (outcome === 'exited') {
        throw new ProcessFailedError('squid exited before it accepted connections', logTail());
      }
    };
    squid.readiness = () => accepting();
    await accepting(opts.signal);

    const scheme = opts.tls ? 'https' : 'http';
    const listening = new Set(['127.0.0.1', ...(opts.listenAddresses ?? [])]);
    return {
      url: `${scheme}://127.0.0.1:${port}`,
      port,
      urlOn: (address) => {
        if (!listening.has(address)) throw new Error(`internal: squid does not listen on ${address}`);
        return `${scheme}://${address}:${port}`;
      },
      accessLogPath,
      accessLog: () => {
        try {
          return readFileSync(accessLogPath, 'utf8');
        } catch {
          return '';
        }
      },
      stop,
      process: squid,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
