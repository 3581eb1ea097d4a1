// jq for ignoreFields' `jqPathExpressions`: removes what each expression selects (`del(expr)`) from
// an object, with jq itself (jq-web, jq compiled to WebAssembly). Expressions come from hub users
// and jq can loop forever, so evaluation runs in a worker thread that is terminated when it takes
// longer than `jqTimeoutMs` (OCM's agent allows 1 s too); the worker has no environment of the
// agent's (jq's `env` sees only the WebAssembly runtime's) and no file system. One worker per
// process, started on first use, replaced after a timeout.
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Longest a batch of expressions may run. */
export const jqTimeoutMs = 1000;
/** Longest expression accepted. */
export const jqExpressionMaxLength = 1024;

const workerSource = `
const { parentPort, workerData } = require('node:worker_threads');
require(workerData.jqPath).then((jq) => {
  parentPort.on('message', ({ id, obj, expressions }) => {
    try {
      let current = obj;
      for (const expression of expressions) {
        current = jq.json(current, 'del(' + expression + ')');
        if (current === null || typeof current !== 'object' || Array.isArray(current)) {
          throw new Error('jq expression ' + JSON.stringify(expression) + ' did not leave an object');
        }
      }
      parentPort.postMessage({ id, obj: current });
    } catch (err) {
      parentPort.postMessage({ id, error: String((err && err.message) || err) });
    }
  });
  parentPort.postMessage({ ready: true });
});
`;

interface Reply {
  id?: number;
  obj?: unknown;
  error?: string;
  ready?: boolean;
}

let worker: { thread: Worker; ready: Promise<void> } | undefined;
let nextId = 0;
/** One batch at a time: jq is synchronous inside the worker anyway. */
let queue: Promise<unknown> = Promise.resolve();

function startWorker(): { thread: Worker; ready: Promise<void> } {
  const jqPath = createRequire(import.meta.url).resolve('jq-web');
  const thread = new Worker(workerSource, { eval: true, env: {}, workerData: { jqPath } });
  thread.unref();
  const ready = new Promise<void>((resolve, reject) => {
    const onMessage = (m: Reply) => {
      if (!m.ready) return;
      thread.off('message', onMessage);
      resolve();
    };
    thread.on('message', onMessage);
    thread.once('error', reject);
  });
  thread.on('error', () => {
    if (worker?.thread === thread) worker = undefined;
  });
  return { thread, ready };
}

async function run(obj: unknown, expressions: readonly string[]): Promise<unknown> {
  worker ??= startWorker();
  const current = worker;
  await current.ready;
  const id = nextId++;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      current.thread.off('message', onMessage);
      if (worker === current) worker = undefined;
      void current.thread.terminate();
      reject(new Error(`jq expressions took longer than ${jqTimeoutMs} ms`));
    }, jqTimeoutMs);
    const onMessage = (m: Reply) => {
      if (m.id !== id) return;
      clearTimeout(timer);
      current.thread.off('message', onMessage);
      if (m.error !== undefined) reject(new Error(m.error.split('\n').slice(0, 3).join(' ')));
      else resolve(m.obj);
    };
    current.thread.on('message', onMessage);
    current.thread.postMessage({ id, obj, expressions });
  });
}

/** `obj` without what the jq path expressions select (a copy); throws with jq's message on a bad expression. */
export async function deleteByJq<T>(obj: T, expressions: readonly string[]): Promise<T> {
  if (expressions.length === 0) return structuredClone(obj);
  for (const e of expressions) {
    if (e.length > jqExpressionMaxLength) {
      throw new Error(`jq expression longer than ${jqExpressionMaxLength} characters`);
    }
  }
  const result = queue.then(() => run(obj, expressions));
  queue = result.catch(() => undefined);
  return (await result) as T;
}
