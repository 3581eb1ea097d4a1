// How busy the whole machine is, from /proc/stat (Linux): the CPU time every process spent, the
// benchmark's client and targets included. On a machine whose cores are all busy, throughput
// follows the CPU per byte of every process on the path together, not one side's; the tunnel
// benchmark prints it beside each bulk figure so that a ratio can be read against it.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** Jiffies are 1/100 s on every Linux the benchmark runs on (USER_HZ). */
const USER_HZ = 100;

export interface MachineCpuSample {
  /** CPU seconds all cores spent busy (user, nice, system, irq, softirq, steal) since boot */
  busyS: number;
  /** CPU seconds all cores spent in total (busy + idle + iowait) since boot */
  totalS: number;
}

/** One sample of the machine's CPU counters. */
export function machineCpu(): MachineCpuSample {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = f;
  const busy = user + nice + system + irq + softirq + steal;
  return { busyS: busy / USER_HZ, totalS: (busy + idle + iowait) / USER_HZ };
}

/** Between two samples: the busy fraction of all cores (0–1) and the CPU seconds spent. */
export function machineBusy(a: MachineCpuSample, b: MachineCpuSample): { busy: number; cpuS: number } {
  const total = b.totalS - a.totalS;
  const cpuS = b.busyS - a.busyS;
  return { busy: total > 0 ? cpuS / total : 0, cpuS };
}

/** Cores the busy fraction is of. */
export const machineCores = availableParallelism();
