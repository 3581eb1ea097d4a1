// One child process of a local environment: output goes to a log file and a small ring buffer
// (quoted in errors), the child is tied to our lifetime with a parent-death signal (setpriv
// --pdeathsig, so even a SIGKILLed tether leaves no orphans), it can be respawned with the same
// command line after a crash (the policy lives in supervisor.ts), and stop() escalates from SIGTERM
// to SIGKILL after a grace period.
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export { freePort } from './free-port.ts';

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
  /** run as this user (set before the parent-death signal, so the signal survives the switch) */
  user?: { uid: number; gid: number };
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** "SIGKILL" or "exit code 1": how a process ended, for messages. */
export function describeExit(info: ExitInfo): string {
  return info.signal ?? `exit code ${info.code}`;
}

/**
 * One child process, respawnable with the same command line (see supervisor.ts): output goes to a
 * log file (appended across runs) and a small ring buffer quoted in errors.
 */
export class SupervisedProcess {
  readonly name: string;
  readonly logFile: string;
  /** Resolves once this process is serving again after a respawn; set by whoever starts it. */
  readiness?: () => Promise<void>;
  private readonly opts: SupervisedProcessOptions;
  private child!: ChildProcess;
  private readonly tailLines: string[] = [];
  private partial = '';
  private stopping = false;
  private runExited!: Promise<ExitInfo>;
  private exitInfo: ExitInfo | undefined;
  private runStartedAt = 0;
  private unexpectedExitHandlers: Array<(desc: string, info: ExitInfo) => void> = [];

  constructor(opts: SupervisedProcessOptions) {
    this.name = opts.name;
    this.logFile = opts.logFile;
    this.opts = opts;
    this.spawnRun();
  }

  private spawnRun(): void {
    const opts = this.opts;
    const log = createWriteStream(opts.logFile, { flags: 'a' });
    log.on('error', () => {});
    const [cmd, args] = setprivPath
      ? [setprivPath, ['--pdeathsig', 'SIGKILL', '--', opts.command, ...opts.args]]
      : [opts.command, opts.args];
    this.exitInfo = undefined;
    this.runStartedAt = Date.now();
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? localChildEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
      // Own session: a Ctrl-C in the terminal reaches `tether up` alone, which stops children in order.
      detached: true,
      ...(opts.user ? { uid: opts.user.uid, gid: opts.user.gid } : {}),
    });
    this.child = child;
    const onData = (chunk: Buffer): void => {
      log.write(chunk);
      const text = this.partial + chunk.toString();
      const lines = text.split('\n');
      this.partial = lines.pop() ?? '';
      for (const line of lines) {
        this.tailLines.push(line);
        if (this.tailLines.length > TAIL_LINES) this.tailLines.shift();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('close', () => log.end());
    this.runExited = new Promise((resolve) => {
      const finish = (info: ExitInfo): void => {
        if (this.exitInfo) return;
        this.exitInfo = info;
        resolve(info);
        if (!this.stopping) {
          const desc = `${this.name} exited unexpectedly (${describeExit(info)})`;
          for (const h of this.unexpectedExitHandlers) h(desc, info);
        }
      };
      child.on('error', (err) => {
        this.tailLines.push(`spawn error: ${err.message}`);
        // without a pid the process never ran and no 'exit' follows
        if (child.pid === undefined) {
          log.end();
          finish({ code: -1, signal: null });
        }
      });
      child.on('exit', (code, signal) => finish({ code, signal }));
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exitInfo === undefined;
  }

  /** When the current (or last) run started (ms timestamp). */
  get startedAt(): number {
    return this.runStartedAt;
  }

  /** Resolves when the current run ends. */
  get exited(): Promise<ExitInfo> {
    return this.runExited;
  }

  /** The last lines the process printed (across runs), for error messages. */
  tail(lines = 15): string {
    const all = this.partial ? [...this.tailLines, this.partial] : this.tailLines;
    return all.slice(-lines).join('\n');
  }

  /** Called each time the process dies without stop() having been called. */
  onUnexpectedExit(handler: (desc: string, info: ExitInfo) => void): void {
    this.unexpectedExitHandlers.push(handler);
  }

  /**
   * Starts the process again with the same command line, environment and log file. Returns false
   * (and does nothing) while it runs or once stop() was called.
   */
  respawn(): boolean {
    if (this.stopping || this.running) return false;
    if (this.partial) {
      this.tailLines.push(this.partial);
      this.partial = '';
    }
    this.spawnRun();
    return true;
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. No respawn after. */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.runExited;
    clearTimeout(timer);
  }
}
