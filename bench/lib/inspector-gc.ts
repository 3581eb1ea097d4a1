// A full GC and the V8 heap size of another Node process, through its inspector (started with
// `--inspect=127.0.0.1:0`, which prints "Debugger listening on ws://…" to stderr). RSS alone cannot
// tell a leak from memory V8 keeps after a load; the heap after a forced GC can. Loopback only, one
// short-lived session per call.
import WebSocket from 'ws';

/** The inspector URL a child printed (`Debugger listening on ws://…`), or undefined. */
export function inspectorUrl(log: string): string | undefined {
  return /Debugger listening on (ws:\/\/127\.0\.0\.1:\d+\/[0-9a-f-]+)/.exec(log)?.[1];
}

/** Runs a full GC in the process behind `url` and returns its used heap (bytes) afterwards. */
export async function heapAfterGc(url: string, timeoutMs = 30_000): Promise<number> {
  const ws = new WebSocket(url);
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  const failAll = (err: Error): void => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  };
  ws.on('message', (data) => {
    const msg = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string } };
    const p = msg.id === undefined ? undefined : pending.get(msg.id);
    if (!p || msg.id === undefined) return;
    pending.delete(msg.id);
    if (msg.error) p.reject(new Error(`inspector: ${msg.error.message}`));
    else p.resolve(msg.result);
  });
  ws.on('close', () => failAll(new Error(`inspector session ${url} closed`)));
  const timer = setTimeout(() => {
    failAll(new Error(`inspector ${url}: no answer within ${timeoutMs} ms`));
    ws.terminate();
  }, timeoutMs);
  const call = (method: string): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method }));
    });
  try {
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    // Twice: the first pass can leave objects whose finalizers free more on the second.
    await call('HeapProfiler.collectGarbage');
    await call('HeapProfiler.collectGarbage');
    const usage = (await call('Runtime.getHeapUsage')) as { usedSize: number };
    return usage.usedSize;
  } finally {
    clearTimeout(timer);
    ws.close();
  }
}
