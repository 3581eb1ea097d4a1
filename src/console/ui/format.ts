// Small readers and formatters shared by the views: a condition's status, Kubernetes quantities,
// ages and expiries. Pure functions of the objects; no DOM.
import type { Condition, KubeObject } from './types.ts';

/** The condition `type` of `obj`, if it has one. */
export function conditionOf(obj: KubeObject | undefined, type: string): Condition | undefined {
  return obj?.status?.conditions?.find((c) => c.type === type);
}

/** "True", "False" or "Unknown" (no such condition counts as Unknown). */
export function conditionStatus(obj: KubeObject | undefined, type: string): 'True' | 'False' | 'Unknown' {
  const status = conditionOf(obj, type)?.status;
  return status === 'True' || status === 'False' ? status : 'Unknown';
}

const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50 };
const DECIMAL: Record<string, number> = { m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15 };

/** A Kubernetes quantity ("1500m", "8Gi", "2") as a number, or undefined if it is not one. */
export function parseQuantity(q: unknown): number | undefined {
  if (typeof q !== 'string' && typeof q !== 'number') return undefined;
  const m = /^([0-9.]+(?:e[0-9]+)?)([a-zA-Z]*)$/.exec(String(q).trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  const suffix = m[2] ?? '';
  const scale = suffix === '' ? 1 : (BINARY[suffix] ?? DECIMAL[suffix]);
  return scale === undefined || Number.isNaN(n) ? undefined : n * scale;
}

/** CPU cores, e.g. "3.5". */
export function formatCpu(q: unknown): string {
  const n = parseQuantity(q);
  return n === undefined ? '–' : `${Number(n.toFixed(2))}`;
}

/** Memory in binary units, e.g. "7.6 GiB". */
export function formatMemory(q: unknown): string {
  const n = parseQuantity(q);
  if (n === undefined) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${Number(v.toFixed(1))} ${units[i]}`;
}

/** How long ago (or, negative, how far ahead) `iso` is, as "5m", "3h", "2d". */
export function age(iso: string | undefined, now = Date.now()): string {
  if (!iso) return '–';
  const ms = now - Date.parse(iso);
  if (Number.isNaN(ms)) return '–';
  const s = Math.abs(ms) / 1000;
  const text =
    s < 60
      ? `${Math.floor(s)}s`
      : s < 3600
        ? `${Math.floor(s / 60)}m`
        : s < 86400
          ? `${Math.floor(s / 3600)}h`
          : `${Math.floor(s / 86400)}d`;
  return ms < 0 ? `in ${text}` : text;
}

/** A field of a loose record, as a record (or empty). */
export function recordOf(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/** A field of a loose record, as an array (or empty). */
export function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** A field as a string (or ''). */
export function stringOf(value: unknown): string {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : '';
}
