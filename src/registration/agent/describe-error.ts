// One log line for a failed request. client-node's fetch failures say only "fetch failed"; the
// reason (ECONNREFUSED, a certificate the proxy or hub presented that does not verify, …) is in the
// `cause` chain, which is what an operator needs to see.
import { errorMessage } from '../../errors.ts';

/** The error's message followed by its causes' codes and messages, at most four levels deep. */
export function describeError(err: unknown): string {
  const parts: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e && depth < 4; depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    const part = [typeof code === 'string' ? code : '', typeof message === 'string' ? message : '']
      .join(' ')
      .trim();
    if (part && !parts.includes(part)) parts.push(part);
    e = (e as { cause?: unknown }).cause;
  }
  return parts.join(': ') || errorMessage(err);
}
