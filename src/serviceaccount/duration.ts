// Durations the way OCM's Go side writes and shows them: spec.rotation.validity is a Go
// time.Duration string (`8640h0m0s`, `24h`, `1h30m10s`, `1.5h`), and ages in tables follow
// kubectl's HumanDuration (`45s`, `5m30s`, `3h5m`, `12d`). Pure functions, no I/O.
import { InvalidArgumentError } from '../errors.ts';

const unitMs: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3, // U+00B5 micro sign
  μs: 1e-3, // U+03BC Greek mu
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Go's time.Duration range: ±(2^63−1) ns ≈ 292 years. */
const maxDurationMs = 9_223_372_036_854.775;

/** A duration string is short; anything longer is not one (and would only cost time to scan). */
const maxDurationLength = 64;

/**
 * Milliseconds in a Go duration string (time.ParseDuration syntax: an optional sign, then one or
 * more `<decimal><unit>` with units ns, us, µs, ms, s, m, h; "0" alone is allowed). Throws
 * InvalidArgumentError naming the text for anything else.
 */
export function parseGoDuration(text: string): number {
  const fail = (why: string) =>
    new InvalidArgumentError(
      `invalid duration "${text}": ${why} (Go syntax, e.g. 8640h0m0s, 24h, 90m, 1h30m10s)`,
    );
  if (typeof text !== 'string' || text.length === 0) throw fail('empty');
  if (text.length > maxDurationLength) throw fail(`longer than ${maxDurationLength} characters`);
  let rest = text;
  let sign = 1;
  if (rest[0] === '-' || rest[0] === '+') {
    sign = rest[0] === '-' ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') throw fail('no number');
  let total = 0;
  const part = /^(\d*)(?:\.(\d*))?([^\d.]+)/u;
  while (rest.length > 0) {
    const m = part.exec(rest);
    if (!m) throw fail(`cannot read "${rest}"`);
    const [whole, intPart = '', fracPart, unit = ''] = m;
    if (intPart === '' && (fracPart === undefined || fracPart === '')) throw fail('a unit without a number');
    const scale = unitMs[unit];
    if (scale === undefined) throw fail(`unknown unit "${unit}"`);
    total += Number(`${intPart || '0'}.${fracPart || '0'}`) * scale;
    rest = rest.slice(whole.length);
  }
  if (total > maxDurationMs) throw fail('out of range');
  return sign * total;
}

/** Go's Duration.String for whole seconds: `8640h0m0s`, `10m0s`, `45s`, `0s`. */
export function formatGoDuration(seconds: number): string {
  const s = Math.trunc(seconds);
  if (s === 0) return '0s';
  const abs = Math.abs(s);
  const h = Math.floor(abs / 3600);
  const m = Math.floor((abs % 3600) / 60);
  const sec = abs % 60;
  const body = h > 0 ? `${h}h${m}m${sec}s` : m > 0 ? `${m}m${sec}s` : `${sec}s`;
  return s < 0 ? `-${body}` : body;
}

// The AGE column format is shared by every `tether get` table.
export { formatAge } from '../kube/human-duration.ts';
