// Go konnectivity (apiserver-network-proxy: the tunnel OCM's cluster-proxy ships) beside tether in
// the tunnel benchmark. Given a directory holding its `server` and `agent` binaries (built from the
// public repository, `go build -mod=vendor ./cmd/server ./cmd/agent`; a benchmark tool, never part
// of tether), it starts the pair as cluster-proxy runs them:
//   client ──TLS (mTLS)──▶ konnectivity server, HTTP-CONNECT frontend ──gRPC tunnel──▶ agent ──▶ target
// with the same certificates as tether's side: the frontend serves the benchmark's server
// certificate and trusts the hub-service client CA, the agent presents a client certificate of the
// benchmark CA. The agent dials whatever `CONNECT host:port` names, so clients ask for
// `127.0.0.1:<target port>` (the targets live in the benchmark's cluster process).
//
// CPU and RSS are read from /proc for each Go process: the server stands for tether's hub process
// (ProxyServer + frontend), the agent plus the cluster process's targets for tether's cluster side.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/localenv/free-port.ts';
import { pollUntil } from '../../src/wait.ts';

export interface KonnectivityTls {
  caPem: string;
  serverCert: { certPem: string; keyPem: string };
  /** CA the frontend verifies hub-service client certificates with */
  clientCaPem: string;
  /** the agent's client certificate, signed by caPem */
  agentCert: { certPem: string; keyPem: string };
}

export interface ProcCpu {
  /** user + system CPU of the process so far, µs */
  cpuMicros: number;
  rss: number;
}

const CLK_TCK = 100;

/** CPU (µs) and RSS (bytes) of `pid` from /proc. */
export function procCpu(pid: number): ProcCpu {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // fields after the command name (which may hold spaces) start past the last ')'
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14, 15)
  const rssPages = Number(fields[21]); // rss (field 24)
  return { cpuMicros: (ticks * 1e6) / CLK_TCK, rss: rssPages * 4096 };
}

export class Konnectivity {
  /** the HTTP-CONNECT frontend's port */
  frontendPort = 0;
  private readonly procs: ChildProcess[] = [];
  private readonly dir = mkdtempSync(join(tmpdir(), 'tether-bench-anp-'));
  private readonly output: string[] = [];

  private readonly binDir: string;

  private constructor(binDir: string) {
    this.binDir = binDir;
  }

  /** Starts server and agent from `binDir`; resolves once the server reports an agent (readyz). */
  static async start(binDir: string, tls: KonnectivityTls): Promise<Konnectivity> {
    for (const bin of ['server', 'agent'])
      if (!existsSync(join(binDir, bin)))
        throw new Error(
          `--anp=${binDir}: no ${bin} binary there (build apiserver-network-proxy with \`go build -mod=vendor -o DIR ./cmd/server ./cmd/agent\`)`,
        );
    const k = new Konnectivity(binDir);
    try {
      await k.launch(tls);
    } catch (err) {
      await k.stop();
      throw err;
    }
    return k;
  }

  get serverPid(): number {
    return this.procs[0]?.pid ?? 0;
  }

  get agentPid(): number {
    return this.procs[1]?.pid ?? 0;
  }

  private file(name: string, text: string): string {
    const path = join(this.dir, name);
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  }

  private spawnBin(bin: string, args: string[]): ChildProcess {
    const child = spawn(join(this.binDir, bin), args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.on('data', (c: Buffer) => {
      this.output.push(`${bin}: ${c.toString()}`);
      if (this.output.length > 50) this.output.shift();
    });
    this.procs.push(child);
    return child;
  }

  private async launch(tls: KonnectivityTls): Promise<void> {
    const ca = this.file('ca.crt', tls.caPem);
    const clientCa = this.file('client-ca.crt', tls.clientCaPem);
    const cert = this.file('server.crt', tls.serverCert.certPem);
    const key = this.file('server.key', tls.serverCert.keyPem);
    const agentCert = this.file('agent.crt', tls.agentCert.certPem);
    const agentKey = this.file('agent.key', tls.agentCert.keyPem);
    const [frontend, agentPort, admin, health, agentAdmin, agentHealth] = await Promise.all(
      Array.from({ length: 6 }, () => freePort()),
    );
    this.frontendPort = frontend as number;
    this.spawnBin('server', [
      '--mode=http-connect',
      '--uds-name=',
      `--server-port=${frontend}`,
      '--server-bind-address=127.0.0.1',
      `--server-cert=${cert}`,
      `--server-key=${key}`,
      `--server-ca-cert=${clientCa}`,
      `--agent-port=${agentPort}`,
      '--agent-bind-address=127.0.0.1',
      `--cluster-cert=${cert}`,
      `--cluster-key=${key}`,
      `--cluster-ca-cert=${ca}`,
      `--admin-port=${admin}`,
      `--health-port=${health}`,
      '--health-bind-address=127.0.0.1',
      '--server-count=1',
      '--server-id=bench',
      '--proxy-strategies=default',
      '-v=0',
    ]);
    this.spawnBin('agent', [
      '--proxy-server-host=127.0.0.1',
      `--proxy-server-port=${agentPort}`,
      `--ca-cert=${ca}`,
      `--agent-cert=${agentCert}`,
      `--agent-key=${agentKey}`,
      '--agent-id=bench-agent',
      `--admin-server-port=${agentAdmin}`,
      `--health-server-port=${agentHealth}`,
      '--health-server-host=127.0.0.1',
      '-v=0',
    ]);
    const outcome = await pollUntil(
      async () => {
        if (this.procs.some((p) => p.exitCode !== null)) return 'exited';
        const res = await fetch(`http://127.0.0.1:${health}/readyz`);
        return res.status === 200 ? 'ready' : false;
      },
      {
        timeoutMs: 20_000,
        intervalMs: 100,
        description: 'the konnectivity server ready with its agent connected',
      },
    );
    if (outcome === 'exited')
      throw new Error(`konnectivity exited at start: ${this.output.join('').slice(-2000)}`);
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.procs.map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            p.once('exit', () => resolve());
            p.kill('SIGKILL');
          }),
      ),
    );
    rmSync(this.dir, { recursive: true, force: true });
  }
}
