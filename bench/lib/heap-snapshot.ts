// Heap snapshots of another Node process through its inspector (`--inspect=127.0.0.1:0`), and a
// summary of one by constructor: how many live objects of each kind and their shallow size. Two
// summaries taken before and after a load tell what the load left behind, kind by kind — the
// question a number like "heap +8 MB" cannot answer. Loopback only, one short session per snapshot.
import { type InspectorSession, withInspector } from './inspector-gc.ts';

/** Live objects of one kind in a snapshot. */
export interface HeapKind {
  /** V8 node type and name, e.g. `object Http2Stream`, `closure onTimeout`, `string` */
  kind: string;
  count: number;
  /** sum of shallow sizes, bytes */
  size: number;
}

/** Largest snapshot accepted (the JSON text), so a runaway heap fails clearly instead of OOMing us. */
const MAX_SNAPSHOT_BYTES = 1.5e9;

/** Takes a heap snapshot (after a full GC) of the process behind `url`; resolves with its JSON text. */
export async function takeHeapSnapshot(url: string, timeoutMs = 120_000): Promise<string> {
  const chunks: string[] = [];
  let bytes = 0;
  const onEvent = (method: string, params: unknown, session: InspectorSession): void => {
    if (method !== 'HeapProfiler.addHeapSnapshotChunk') return;
    const chunk = (params as { chunk?: string } | undefined)?.chunk ?? '';
    bytes += chunk.length;
    if (bytes > MAX_SNAPSHOT_BYTES) {
      session.fail(new Error(`heap snapshot of ${url} exceeds ${MAX_SNAPSHOT_BYTES} bytes`));
      return;
    }
    chunks.push(chunk);
  };
  return withInspector(
    url,
    timeoutMs,
    async ({ call }) => {
      await call('HeapProfiler.enable');
      await call('HeapProfiler.collectGarbage');
      await call('HeapProfiler.collectGarbage');
      // The chunks arrive as events before the call's answer.
      await call('HeapProfiler.takeHeapSnapshot', { reportProgress: false, captureNumericValue: false });
      return chunks.join('');
    },
    { maxPayload: 256 * 1024 * 1024, onEvent },
  );
}

interface SnapshotJson {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Live objects by kind (type + constructor or function name), largest count first. */
export function summarizeHeapSnapshot(text: string): HeapKind[] {
  const snap = JSON.parse(text) as SnapshotJson;
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const byKind = new Map<string, HeapKind>();
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + typeAt] ?? 0] ?? '?';
    // Names of strings and numbers are their values: group those by type alone.
    const named = type === 'object' || type === 'closure' || type === 'native' || type === 'hidden';
    const kind = named ? `${type} ${snap.strings[snap.nodes[i + nameAt] ?? 0] ?? '?'}` : type;
    let k = byKind.get(kind);
    if (!k) {
      k = { kind, count: 0, size: 0 };
      byKind.set(kind, k);
    }
    k.count += 1;
    k.size += snap.nodes[i + sizeAt] ?? 0;
  }
  return [...byKind.values()].sort((a, b) => b.count - a.count);
}

/** Kind-by-kind growth from `before` to `after` (only kinds that changed), largest growth first. */
export function heapGrowth(before: HeapKind[], after: HeapKind[]): HeapKind[] {
  const base = new Map(before.map((k) => [k.kind, k]));
  const grown: HeapKind[] = [];
  const seen = new Set<string>();
  for (const a of after) {
    seen.add(a.kind);
    const b = base.get(a.kind);
    const d = { kind: a.kind, count: a.count - (b?.count ?? 0), size: a.size - (b?.size ?? 0) };
    if (d.count !== 0 || d.size !== 0) grown.push(d);
  }
  for (const b of before) {
    if (!seen.has(b.kind)) grown.push({ kind: b.kind, count: -b.count, size: -b.size });
  }
  return grown.sort((x, y) => y.size - x.size || y.count - x.count);
}
