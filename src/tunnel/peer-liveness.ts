// Is the peer of a tunnel session still there? A frozen process or a black-holed path sends no
// close, so the only signs are silence: a PING that goes unanswered while not a byte arrives on
// the connection. A busy peer on a slow link may answer a PING late, but its bytes keep coming, so
// it is not taken for silent. The peer counts as unresponsive once both have lasted
// unresponsiveAfterMs; the owner is told once per such episode (to reset the streams that wait on
// it) and asks `isUnresponsive` before opening new ones.
// Silence only shows while a PING is out, and periodic PINGs are 10 s apart: so when we send the
// peer something (a request on an open stream) with no PING out, a PING goes along within a
// second, and a request waiting on a frozen peer fails within about unresponsiveAfterMs + 1 s.
import type { SessionKeepalive } from './keepalive.ts';

/** How often read progress is sampled while a PING is outstanding (ms). */
const SAMPLE_INTERVAL_MS = 250;
/** How often we look for bytes we sent with no PING out (ms). */
const WRITE_CHECK_INTERVAL_MS = 1000;
/**
 * Bytes written in one check interval that earn a PING. Above what the keepalive writes by itself
 * in that time (a PING and a PING answer: 17 bytes each, about 40 with TLS framing), so an idle
 * session does not ping itself every second.
 */
const WRITE_PROBE_MIN_BYTES = 128;

export class PeerLiveness {
  private readonly keepalive: SessionKeepalive;
  private readonly socket: { bytesRead?: number; bytesWritten?: number };
  private readonly unresponsiveAfterMs: number;
  private readonly onUnresponsive: (silentMs: number) => void;
  private lastBytesRead = -1;
  private lastReadAt = Date.now();
  private sampler: NodeJS.Timeout | undefined;
  private reported = false;
  private lastBytesWritten = 0;
  private readonly writeCheck: NodeJS.Timeout;

  constructor(opts: {
    keepalive: SessionKeepalive;
    /** the connection under the session; its bytesRead shows the peer still sends */
    socket: { bytesRead?: number; bytesWritten?: number };
    unresponsiveAfterMs: number;
    onUnresponsive: (silentMs: number) => void;
  }) {
    this.keepalive = opts.keepalive;
    this.socket = opts.socket;
    this.unresponsiveAfterMs = opts.unresponsiveAfterMs;
    this.onUnresponsive = opts.onUnresponsive;
    // Silence is measured from the PING on: what arrived before it says nothing about now.
    this.keepalive.onPingSent = () => {
      this.sampleReads();
      this.startSampling();
    };
    this.lastBytesWritten = this.socket.bytesWritten ?? 0;
    this.writeCheck = setInterval(() => this.probeAfterWrites(), WRITE_CHECK_INTERVAL_MS);
    this.writeCheck.unref();
  }

  private probeAfterWrites(): void {
    const n = this.socket.bytesWritten;
    if (typeof n !== 'number') return;
    const sent = n - this.lastBytesWritten;
    this.lastBytesWritten = n;
    if (sent >= WRITE_PROBE_MIN_BYTES && !this.keepalive.waiting) this.keepalive.ping();
  }

  /** How long the peer has been silent: no PING answer and no byte read (ms; 0 with no PING out). */
  silentForMs(now = Date.now()): number {
    if (!this.keepalive.waiting) return 0;
    this.sampleReads(now);
    return Math.min(this.keepalive.unansweredForMs(now), now - this.lastReadAt);
  }

  get isUnresponsive(): boolean {
    return this.silentForMs() >= this.unresponsiveAfterMs;
  }

  private sampleReads(now = Date.now()): void {
    const n = this.socket.bytesRead;
    if (typeof n === 'number' && n !== this.lastBytesRead) {
      this.lastBytesRead = n;
      this.lastReadAt = now;
    }
  }

  private startSampling(): void {
    if (this.sampler) return;
    this.sampler = setInterval(() => {
      if (!this.keepalive.waiting) {
        this.stopSampling();
        return;
      }
      const silent = this.silentForMs();
      if (silent < this.unresponsiveAfterMs) {
        this.reported = false;
      } else if (!this.reported) {
        this.reported = true;
        this.onUnresponsive(silent);
      }
    }, SAMPLE_INTERVAL_MS);
    this.sampler.unref();
  }

  private stopSampling(): void {
    clearInterval(this.sampler);
    this.sampler = undefined;
    this.reported = false;
  }

  stop(): void {
    clearInterval(this.writeCheck);
    this.stopSampling();
  }
}
