// A full GC and the V8 heap size of another Node process, through its inspector (started with
// `--inspect=127.0.0.1:0`, which prints "Debugger listening on ws://…" to stderr). RSS alone cannot
// tell a leak from memory V8 keeps after a load; the heap after a forced GC can. Loopback only, one
// short-lived session per call (withInspector, also used for heap snapshots).
import WebSocket from 'ws';

/** The inspector URL a child printed (`Debugger listening on ws://…`), or undefined. */
export function inspectorUrl(log: string): string | undefined {
  return /Debugger listening on (ws:\/\/127\.0\.0\.1:\d+\/[0-9a-f-]+)/.exec(log)?.[1];
}

/** A short inspector session: Chrome DevTools protocol calls, and the events it sends meanwhile. */
export interface InspectorSession {
  call(method: string, params?: Record<string, unknown>): Promise<unknown>;
  /** rejects every pending call with `err` and drops the connection */
  fail(err: Error): void;
}

/**
 * Opens a session to the inspector at `url`, runs `use` with it and closes it; every call fails
 * once `timeoutMs` has passed. `onEvent` sees the protocol's events (messages without an id).
 */
export async function withInspector<T>(
  url: string,
  timeoutMs: number,
  use: (session: InspectorSession) => Promise<T>,
  opts: {
    maxPayload?: number;
    onEvent?: (method: string, params: unknown, session: InspectorSession) => void;
  } = {},
): Promise<T> {
  const ws = new WebSocket(url, opts.maxPayload ? { maxPayload: opts.maxPayload } : undefined);
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  const session: InspectorSession = {
    call: (method, params) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve, reject });
        ws.send(JSON.stringify({ id, method, params }));
      }),
    fail: (err) => {
      for (const p of pending.values()) p.reject(err);
      pending.clear();
      ws.terminate();
    },
  };
  ws.on('message', (data) => {
    const msg = JSON.parse(String(data)) as {
      id?: number;
      method?: string;
      params?: unknown;
      result?: unknown;
      error?: { message: string };
    };
    if (msg.id === undefined) {
      if (msg.method) opts.onEvent?.(msg.method, msg.params, session);
      return;
    }
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    if (msg.error) p.reject(new Error(`inspector: ${msg.error.message}`));
    else p.resolve(msg.result);
  });
  ws.on('close', () => {
    for (const p of pending.values()) p.reject(new Error(`inspector session ${url} closed`));
    pending.clear();
  });
  const timer = setTimeout(
    () => session.fail(new Error(`inspector ${url}: no answer within ${timeoutMs} ms`)),
    timeoutMs,
  );
  try {
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    return await use(session);
  } finally {
    clearTimeout(timer);
    ws.close();
  }
}

/** Runs a full GC in the process behind `url` and returns its used heap (bytes) afterwards. */
export function heapAfterGc(url: string, timeoutMs = 30_000): Promise<number> {
  return withInspector(url, timeoutMs, async ({ call }) => {
    // Twice: the first pass can leave objects whose finalizers free more on the second.
    await call('HeapProfiler.collectGarbage');
    await call('HeapProfiler.collectGarbage');
    const usage = (await call('Runtime.getHeapUsage')) as { usedSize: number };
    return usage.usedSize;
  });
}

/** Where a process's memory sits, as it reports it itself (bytes; no GC forced). */
export interface MemoryBreakdown {
  rss: number;
  /** V8 heap reserved, all spaces */
  heapTotal: number;
  heapUsed: number;
  /** new space reserved (both semi-spaces): young-generation headroom, mostly empty when idle */
  newSpace: number;
  /** old space used: long-lived objects, module source strings < 1 MB among them */
  oldSpaceUsed: number;
  /** code + trusted spaces used: bytecode and compiled code */
  codeUsed: number;
  /** large objects used */
  largeObjectUsed: number;
  /** memory V8 objects hold outside the heap: Buffers, external strings (Node makes source files > 1 MB one) */
  external: number;
  arrayBuffers: number;
}

/** Reads `process.memoryUsage()` and V8's heap spaces in the process behind `url`. */
export function memoryBreakdown(url: string, timeoutMs = 30_000): Promise<MemoryBreakdown> {
  const expression = `(() => {
    const m = process.memoryUsage();
    const spaces = process.getBuiltinModule('node:v8').getHeapSpaceStatistics();
    const used = (...names) => spaces.filter((s) => names.includes(s.space_name)).reduce((a, s) => a + s.space_used_size, 0);
    return JSON.stringify({
      rss: m.rss, heapTotal: m.heapTotal, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers,
      newSpace: spaces.find((s) => s.space_name === 'new_space')?.space_size ?? 0,
      oldSpaceUsed: used('old_space'),
      codeUsed: used('code_space', 'code_large_object_space', 'trusted_space', 'trusted_large_object_space'),
      largeObjectUsed: used('large_object_space'),
    });
  })()`;
  return withInspector(url, timeoutMs, async ({ call }) => {
    const r = (await call('Runtime.evaluate', { expression, returnByValue: true })) as {
      result: { value: string };
    };
    return JSON.parse(r.result.value) as MemoryBreakdown;
  });
}
