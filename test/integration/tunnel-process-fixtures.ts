// Fixtures for tunnel tests with real processes: `tether proxy-server` and `tether proxy-agent`
// spawned from bin/tether.js on loopback ports with certificate files from a test PKI, a CONNECT
// client for the frontend that reports status, tether-error and tether-reason, and a TCP relay
// that can black-hole a link (no FIN, no RST: bytes stop, as when a network path is cut).
// Everything started here is tracked by its TunnelProcesses and ended by cleanup().
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { request } from 'undici';
import { freePort } from '../../src/localenv/process.ts';
import type { KeyPairPem } from '../../src/pki/index.ts';
import { pollUntil } from '../../src/wait.ts';
import { type HubPki, hubPki } from './tunnel-fixtures.ts';

export interface TetherProc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

export interface ServerPorts {
  agent: number;
  connect: number;
  ops: number;
}

export interface ConnectAnswer {
  status: number;
  /** tether-error header ('' when absent) */
  code: string;
  /** tether-reason header ('' when absent) */
  reason: string;
  /** from writing CONNECT to the end of the answer's head */
  ms: number;
  socket: TLSSocket;
}

/** A loopback TCP relay whose links can be black-holed and restored. */
export interface Relay {
  port: number;
  /**
   * stop moving bytes (and closes) on every link, and hold new connections without dialling onward;
   * links whose one side closed meanwhile stay half-dead on the other side
   */
  cut(): void;
  /** move bytes again; held connections are dialled onward */
  restore(): void;
  close(): Promise<void>;
}

export class TunnelProcesses {
  readonly pki: HubPki;
  readonly dir: string;
  readonly files: Record<string, string>;
  private readonly children: ChildProcess[] = [];
  private readonly relays: Relay[] = [];
  private readonly sockets = new Set<Socket>();

  private readonly client: KeyPairPem;

  private constructor(pki: HubPki, dir: string, files: Record<string, string>, client: KeyPairPem) {
    this.pki = pki;
    this.dir = dir;
    this.files = files;
    this.client = client;
  }

  /**
   * A PKI (a fresh one unless given: e2e tests pass the hub's) written to a fresh temp dir: CA,
   * server cert, proxy-client CA and a client cert.
   */
  static async create(given?: HubPki): Promise<TunnelProcesses> {
    const pki = given ?? (await hubPki());
    const dir = mkdtempSync(join(tmpdir(), 'tether-tunnel-proc-'));
    const client = await pki.proxyClientCert('hub-service');
    const files: Record<string, string> = {};
    const write = (key: string, name: string, content: string): void => {
      files[key] = join(dir, name);
      writeFileSync(files[key] as string, content);
    };
    write('ca', 'ca.crt', pki.ca.certPem);
    write('serverCert', 'server.crt', pki.server.certPem);
    write('serverKey', 'server.key', pki.server.keyPem);
    write('clientCa', 'proxy-client-ca.crt', pki.proxyClientCa.certPem);
    write('clientCert', 'client.crt', client.certPem);
    write('clientKey', 'client.key', client.keyPem);
    return new TunnelProcesses(pki, dir, files, client);
  }

  /** `tether <args>` as a child process; `env` is added to ours. */
  tether(args: string[], env: Record<string, string> = {}): TetherProc {
    const child = spawn(process.execPath, ['bin/tether.js', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TETHER_LOG_LEVEL: 'info', ...env },
    });
    this.children.push(child);
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    return {
      child,
      output: () => out,
      exited: new Promise((r) => child.on('exit', (code) => r(code))),
    };
  }

  async ready(opsPort: number, timeoutMs = 15_000): Promise<void> {
    await pollUntil(
      async () => {
        const res = await request(`http://127.0.0.1:${opsPort}/readyz`);
        await res.body.text();
        return res.statusCode === 200;
      },
      { timeoutMs, intervalMs: 100, description: `readyz on ${opsPort}` },
    );
  }

  /**
   * Polls until the proxy-server behind `serverOps` holds a tunnel of `cluster`. An agent is ready
   * once it has answered the hello, a moment before the server has registered the tunnel.
   */
  async agentHeld(serverOps: number, cluster: string, timeoutMs = 15_000): Promise<void> {
    const series = `tether_proxy_connected_agents{cluster="${cluster}"}`;
    await pollUntil(
      async () => {
        const res = await request(`http://127.0.0.1:${serverOps}/metrics`);
        const line = (await res.body.text()).split('\n').find((l) => l.startsWith(series));
        return line !== undefined && Number(line.slice(line.lastIndexOf(' ') + 1)) >= 1;
      },
      { timeoutMs, intervalMs: 50, description: `a tunnel of ${cluster} on the proxy-server` },
    );
  }

  /** `tether proxy-server` without a hub (agents taken on their certificate), ready to serve. */
  async startServer(
    extra: string[] = [],
    env: Record<string, string> = {},
  ): Promise<{ proc: TetherProc; ports: ServerPorts }> {
    const ports = { agent: await freePort(), connect: await freePort(), ops: await freePort() };
    const proc = this.tether(
      [
        'proxy-server',
        '--bind-address=127.0.0.1',
        `--agent-port=${ports.agent}`,
        `--connect-port=${ports.connect}`,
        `--ops-port=${ports.ops}`,
        `--tls-cert-file=${this.files.serverCert}`,
        `--tls-key-file=${this.files.serverKey}`,
        `--agent-ca-file=${this.files.ca}`,
        `--proxy-client-ca-file=${this.files.clientCa}`,
        '--insecure-skip-hub-checks',
        ...extra,
      ],
      env,
    );
    await this.ready(ports.ops);
    return { proc, ports };
  }

  /** `tether proxy-agent` of `cluster` serving kube-apiserver:443 from 127.0.0.1:targetPort. */
  async startAgent(opts: {
    cluster: string;
    agent: string;
    server: string;
    targetPort: number;
    extra?: string[];
  }): Promise<{ proc: TetherProc; opsPort: number }> {
    const cert = await this.pki.agentCert(opts.cluster, opts.agent);
    const certFile = join(this.dir, `${opts.cluster}-${opts.agent}.crt`);
    const keyFile = join(this.dir, `${opts.cluster}-${opts.agent}.key`);
    writeFileSync(certFile, cert.certPem);
    writeFileSync(keyFile, cert.keyPem);
    const opsPort = await freePort();
    const proc = this.tether([
      'proxy-agent',
      `--cluster-name=${opts.cluster}`,
      `--agent-id=${opts.agent}`,
      `--proxy-server=${opts.server}`,
      `--cert-file=${certFile}`,
      `--key-file=${keyFile}`,
      `--hub-ca-file=${this.files.ca}`,
      `--kube-apiserver=127.0.0.1:${opts.targetPort}`,
      `--ops-port=${opsPort}`,
      ...(opts.extra ?? []),
    ]);
    return { proc, opsPort };
  }

  /**
   * CONNECT `authority` on the frontend with the proxy-client certificate; resolves with the
   * answer's head (never rejects on a non-200). Gives up after `timeoutMs` with status 0.
   * `allowHalfOpen` keeps our side open after the peer ends (a client that never ends).
   */
  connect(
    port: number,
    authority: string,
    timeoutMs = 60_000,
    opts: { allowHalfOpen?: boolean } = {},
  ): Promise<ConnectAnswer> {
    return new Promise((resolve, reject) => {
      const started = Date.now();
      // A TLSSocket over a socket of our own takes that socket's allowHalfOpen.
      const raw = netConnect({ host: '127.0.0.1', port, allowHalfOpen: opts.allowHalfOpen ?? false });
      const s = tlsConnect({
        socket: raw,
        host: '127.0.0.1',
        ca: this.pki.ca.certPem,
        cert: this.client.certPem,
        key: this.client.keyPem,
      });
      this.sockets.add(s);
      this.sockets.add(raw);
      s.once('close', () => {
        this.sockets.delete(s);
        this.sockets.delete(raw);
        raw.destroy();
      });
      raw.once('error', (err) => s.destroy(err));
      const timer = setTimeout(() => {
        s.off('data', onData);
        resolve({ status: 0, code: '', reason: 'no answer', ms: Date.now() - started, socket: s });
      }, timeoutMs);
      s.once('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      s.once('secureConnect', () => s.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`));
      let buf = '';
      const onData = (d: Buffer): void => {
        buf += d.toString('latin1');
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        clearTimeout(timer);
        s.off('data', onData);
        const head = buf.slice(0, end);
        const rest = buf.slice(end + 4);
        if (rest) s.unshift(Buffer.from(rest, 'latin1'));
        const header = (name: string): string =>
          new RegExp(`\\r\\n${name}: ([^\\r\\n]*)`, 'i').exec(head)?.[1] ?? '';
        resolve({
          status: Number(head.slice(9, 12)),
          code: header('tether-error'),
          reason: header('tether-reason'),
          ms: Date.now() - started,
          socket: s,
        });
      };
      s.on('data', onData);
    });
  }

  /** A relay on a free loopback port to 127.0.0.1:`targetPort`. */
  async relay(targetPort: number): Promise<Relay> {
    let cut = false;
    const links = new Set<{ a: Socket; b?: Socket }>();
    const held: Array<() => void> = [];
    const sockets = this.sockets;
    const link = (a: Socket): void => {
      const l: { a: Socket; b?: Socket } = { a };
      links.add(l);
      sockets.add(a);
      a.on('error', () => {});
      a.pause();
      const onward = (): void => {
        if (a.destroyed) return;
        const b = netConnect({ host: '127.0.0.1', port: targetPort });
        l.b = b;
        sockets.add(b);
        b.on('error', () => {});
        // A cut link carries no FIN or RST either: the side still open hears nothing.
        const end = (): void => {
          if (cut) return;
          a.destroy();
          b.destroy();
          links.delete(l);
        };
        a.once('close', end);
        b.once('close', end);
        a.on('data', (d: Buffer) => {
          if (!cut) b.write(d);
        });
        b.on('data', (d: Buffer) => {
          if (!cut) a.write(d);
        });
        a.resume();
      };
      if (cut) held.push(onward);
      else onward();
    };
    const server: Server = createServer({ pauseOnConnect: true }, link);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const relay: Relay = {
      port: (server.address() as AddressInfo).port,
      cut: () => {
        cut = true;
      },
      restore: () => {
        cut = false;
        for (const go of held.splice(0)) go();
      },
      close: () =>
        new Promise<void>((r) => {
          for (const l of links) {
            l.a.destroy();
            l.b?.destroy();
          }
          server.close(() => r());
        }),
    };
    this.relays.push(relay);
    return relay;
  }

  /** SIGCONTs and SIGKILLs every child, closes relays and sockets, removes the temp dir. */
  async cleanup(): Promise<void> {
    for (const c of this.children.splice(0)) {
      if (c.exitCode !== null || c.signalCode !== null) continue;
      const gone = new Promise<void>((r) => c.once('exit', () => r()));
      c.kill('SIGCONT');
      c.kill('SIGKILL');
      await gone;
    }
    for (const s of this.sockets) s.destroy();
    await Promise.all(this.relays.splice(0).map((r) => r.close()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
