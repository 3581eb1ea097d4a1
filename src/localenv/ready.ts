// Waiting for a tether child process to report ready on its ops port (/readyz), quoting its log
// when it dies or does not get there in time.
import { Agent, request } from 'undici';
import { TetherError } from '../errors.ts';
import { pollUntil } from '../wait.ts';
import type { SupervisedProcess } from './process.ts';

export async function waitReady(
  proc: SupervisedProcess,
  opsPort: number,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<void> {
  const dispatcher = new Agent({ connect: { timeout: 1000 } });
  try {
    await pollUntil(
      async () => {
        if (!proc.running)
          throw new TetherError('TETHER_PROCESS_FAILED', `${proc.name} exited:\n${proc.tail()}`);
        const res = await request(`http://127.0.0.1:${opsPort}/readyz`, { dispatcher });
        const body = await res.body.text();
        if (res.statusCode !== 200) throw new Error(body.trim());
        return true;
      },
      { timeoutMs, intervalMs: 200, description: `${proc.name} to be ready`, signal },
    ).catch((err: Error) => {
      if (signal?.aborted) throw err;
      throw new TetherError(
        'TETHER_PROCESS_FAILED',
        `${proc.name} did not become ready: ${err.message}\n--- last log lines ---\n${proc.tail()}`,
      );
    });
  } finally {
    await dispatcher.close();
  }
}
