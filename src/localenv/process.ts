// One supervised child process of a local control plane: output goes to a log file and a small
// ring buffer (quoted in errors), the child is tied to our lifetime with a parent-death signal
// (setpriv --pdeathsig, so even a SIGKILLed tether leaves no orphans), and stop() escalates from
// SIGTERM to SIGKILL after a grace period.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync, type WriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The tether command of this checkout, for child processes (`process.execPath tetherBin …`). */
export const tetherBin = fileURLToPath(new URL('../../bin/tether.js', import.meta.url));

const setprivPath = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));
const TAIL_LINES = 40;

/** Loopback, never through a forward proxy: every address of a local environment is on it. */
const LOOPBACK_NO_PROXY = ['localhost', '127.0.0.1', '[::1]'];

/**
 * The environment for a local child: the caller's, with loopback added to NO_PROXY/no_proxy when a
 * forward proxy is configured (tether resolves proxies like curl, which proxies loopback unless
 * listed). Agents reach the hub through squid by explicit --proxy-url, which still wins.
 */
export function localChildEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const proxied = ['https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY', 'all_proxy', 'ALL_PROXY'].some(
    (name) => (env[name] ?? '').trim() !== '',
  );
  if (!proxied) return env;
  const list = (env.no_proxy ?? env.NO_PROXY ?? '').trim();
  if (list === '*') return env;
  const entries = list ? list.split(/[\s,]+/).filter(Boolean) : [];
  const merged = [...entries, ...LOOPBACK_NO_PROXY.filter((h) => !entries.includes(h))].join(',');
  return { ...env, no_proxy: merged, NO_PROXY: merged };
}

export interface SupervisedProcessOptions {
  name: string;
  command: string;
  args: string[];
  logFile: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

export class SupervisedProcess {
  readonly name: string;
  readonly logFile: string;
  private readonly child: ChildProcess;
  private readonly log: WriteStream;
  private readonly tailLines: string[] = [];
  private partial = '';
  private stopping = false;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private unexpectedExitHandlers: Array<(desc: string) => void> = [];

  constructor(opts: SupervisedProcessOptions) {
    this.name = opts.name;
    this.logFile = opts.logFile;
    this.log = createWriteStream(opts.logFile, { flags: 'a' });
    const [cmd, args] = setprivPath
      ? [setprivPath, ['--pdeathsig', 'SIGKILL', '--', opts.command, ...opts.args]]
      : [opts.command, opts.args];
    this.child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? localChildEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const onData = (chunk: Buffer): void => {
      this.log.write(chunk);
      const text = this.partial + chunk.toString();
      const lines = text.split('\n');
      this.partial = lines.pop() ?? '';
      for (const line of lines) {
        this.tailLines.push(line);
        if (this.tailLines.length > TAIL_LINES) this.tailLines.shift();
      }
    };
    this.child.stdout?.on('data', onData);
    this.child.stderr?.on('data', onData);
    this.exited = new Promise((resolve) => {
      this.child.on('error', (err) => {
        this.tailLines.push(`spawn error: ${err.message}`);
        this.exitInfo = { code: -1, signal: null };
        resolve(this.exitInfo);
      });
      this.child.on('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        this.log.end();
        resolve(this.exitInfo);
        if (!this.stopping) {
          const desc = `${this.name} exited unexpectedly (${signal ?? `exit code ${code}`})`;
          for (const h of this.unexpectedExitHandlers) h(desc);
        }
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exitInfo === undefined;
  }

  /** The last lines the process printed, for error messages. */
  tail(lines = 15): string {
    const all = this.partial ? [...this.tailLines, this.partial] : this.tailLines;
    return all.slice(-lines).join('\n');
  }

  /** Called once if the process dies without stop() having been called. */
  onUnexpectedExit(handler: (desc: string) => void): void {
    this.unexpectedExitHandlers.push(handler);
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}

/** A currently free TCP port on 127.0.0.1 (the kernel picks; the caller binds it soon after). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
