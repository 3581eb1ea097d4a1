// What a process holds, read from /proc/<pid> (Linux): open file descriptors (and how many are
// sockets) and resident memory. The soak compares the gateway and proxy-server processes before,
// during and after a load without running inside them.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export interface ProcSample {
  /** entries in /proc/<pid>/fd: sockets, pipes, files, eventfds … */
  fds: number;
  /** of those, sockets (TCP connections, listeners, unix sockets) */
  sockets: number;
  /** resident set size, bytes (VmRSS) */
  rss: number;
}

/** One sample of `pid`; throws naming the pid when the process is gone or unreadable. */
export function procSample(pid: number): ProcSample {
  const dir = `/proc/${pid}/fd`;
  let entries: string[];
  let status: string;
  try {
    entries = readdirSync(dir);
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch (err) {
    throw new Error(`cannot read /proc/${pid} (is process ${pid} still running?): ${(err as Error).message}`);
  }
  let sockets = 0;
  for (const fd of entries) {
    try {
      if (readlinkSync(`${dir}/${fd}`).startsWith('socket:')) sockets += 1;
    } catch {
      // closed between readdir and readlink: not held any more
    }
  }
  const kb = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1] ?? Number.NaN);
  return { fds: entries.length, sockets, rss: kb * 1024 };
}

/** Bytes → "123.4 MB". */
export function mb(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}
