// Structured logging (pino). One root logger; components take children with their own bindings
// (component, cluster, stream). Secrets never go into log fields: redact paths below cover the
// usual places, and callers must not log tokens or keys in messages.
import { type Logger, pino } from 'pino';

export type { Logger };

const level = process.env.TETHER_LOG_LEVEL ?? (process.env.VITEST ? 'silent' : 'info');

export const rootLogger: Logger = pino({
  level,
  base: undefined,
  redact: {
    paths: [
      'token',
      '*.token',
      'authorization',
      '*.authorization',
      'headers.authorization',
      'keyPem',
      '*.keyPem',
      'password',
      '*.password',
    ],
    censor: '[redacted]',
  },
});

/** A child logger for one component, e.g. logger('proxy-server', { cluster: 'cluster1' }). */
export function logger(component: string, bindings: Record<string, unknown> = {}): Logger {
  return rootLogger.child({ component, ...bindings });
}
