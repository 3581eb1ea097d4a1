// The supervisor of `tether up`: when a child dies without being asked to (tether components, squid,
// etcd, kube-apiserver, kube-controller-manager), it says which one and how (exit code or signal,
// last log lines), respawns it with the same command line after a backoff (restart-policy.ts), says
// when it serves again, and gives up only on repeated crashes. Children keep their ports, files and
// data across restarts because nothing here touches them: SupervisedProcess.respawn() reruns the
// same command. Owns its timers only; stopping the processes stays with whoever started them.
import { describeExit, type ExitInfo, type SupervisedProcess } from './process.ts';
import { type RestartLimits, RestartPolicy } from './restart-policy.ts';

export interface SupervisorOptions {
  /** one event (a line, plus indented log lines for a crash), e.g. for stderr */
  report: (message: string) => void;
  /** called once when a process crashed too often; the supervisor has stopped by then */
  onGiveUp: (reason: string) => void;
  limits?: Partial<RestartLimits>;
  /** log lines quoted per crash (default 10) */
  tailLines?: number;
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(1)}s`;
}

function indented(text: string): string {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  return lines.length > 0 ? lines.map((l) => `    ${l}`).join('\n') : '    (no output)';
}

export class Supervisor {
  private readonly opts: SupervisorOptions;
  private stopped = false;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(opts: SupervisorOptions) {
    this.opts = opts;
  }

  /** Restarts `proc` whenever it exits unexpectedly, until stop() or giving up. */
  watch(proc: SupervisedProcess): void {
    const policy = new RestartPolicy(this.opts.limits);
    proc.onUnexpectedExit((_desc, info) => this.crashed(proc, policy, info));
  }

  /** No more restarts (pending ones are cancelled); processes keep running. */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private crashed(proc: SupervisedProcess, policy: RestartPolicy, info: ExitInfo): void {
    if (this.stopped) return;
    const how = describeExit(info);
    const lastLines = indented(proc.tail(this.opts.tailLines ?? 10));
    const decision = policy.crashed(proc.startedAt, Date.now());
    if (!decision.restart) {
      this.opts.report(`${proc.name} exited (${how}); last log lines:\n${lastLines}`);
      this.stop();
      const minutes = decision.windowMs / 60_000;
      this.opts.onGiveUp(
        `${proc.name} crashed ${decision.crashes} times within ${minutes} minute${minutes === 1 ? '' : 's'} (last: ${how}); giving up (its log: ${proc.logFile})`,
      );
      return;
    }
    this.opts.report(
      `${proc.name} exited (${how}); restarting in ${seconds(decision.delayMs)}; last log lines:\n${lastLines}`,
    );
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.restart(proc);
    }, decision.delayMs);
    this.timers.add(timer);
  }

  private async restart(proc: SupervisedProcess): Promise<void> {
    if (this.stopped || !proc.respawn()) return;
    const run = proc.startedAt;
    const sameRun = (): boolean => !this.stopped && proc.running && proc.startedAt === run;
    try {
      await proc.readiness?.();
    } catch (err) {
      // a run that died meanwhile is reported (and restarted) as a crash of its own
      if (sameRun()) this.opts.report(`${proc.name} restarted but is not ready: ${(err as Error).message}`);
      return;
    }
    if (sameRun()) this.opts.report(`${proc.name} is running again (pid ${proc.pid})`);
  }
}
