// Structured logging (pino). One root logger; components take children with their own bindings
// (component, cluster, stream). No token, key or password reaches a log line, in two layers:
//   1. fields: pino's redact censors credential-named fields (token, authorization, keyPem,
//      kubeconfig, …) wherever callers put them;
//   2. text: every serialized line passes through redactSecrets before it is written, which
//      censors credential-shaped text anywhere in it: error messages and stacks, response bodies,
//      URLs. Callers still must not log secrets; this catches what slips through.
import { type Logger, type LoggerOptions, pino } from 'pino';

export type { Logger };

const level = process.env.TETHER_LOG_LEVEL ?? (process.env.VITEST ? 'silent' : 'info');

/**
 * Field names that hold credentials, at the top level and one level down (pino's redact has no
 * recursive wildcard). Not `key`: the work queue and informers log object keys (`ns/name`) under
 * it; key material is `keyPem` / `privateKey` / `keyData` here.
 */
const CREDENTIAL_FIELDS = [
  'token',
  'bearer',
  'authorization',
  'password',
  'keyPem',
  'privateKey',
  'keyData',
  'kubeconfig',
  'bootstrapToken',
  'headers.authorization',
  'headers["proxy-authorization"]',
];
export const REDACTED_PATHS: string[] = CREDENTIAL_FIELDS.flatMap((f) => [f, `*.${f}`]);

const CENSOR = '[redacted]';

/**
 * Credential-shaped text. Lines are JSON, so inside strings a newline is the two characters `\n`
 * and a quote is `\"`: no pattern crosses an unescaped quote.
 */
const SECRET_PATTERNS: Array<[RegExp, string]> = [
  // a PEM private key block (RSA, EC, PKCS#8, encrypted), to its END line or the end of the string
  [
    /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:(?!-----END)[^"])*(?:-----END [A-Z0-9 ]*PRIVATE KEY-----)?/g,
    CENSOR,
  ],
  // base64 of a PEM block, as in kubeconfig `client-key-data` or a Secret's data
  [/LS0tLS1CRUdJTi[A-Za-z0-9+/=]*/g, CENSOR],
  // JWTs: ServiceAccount, TokenRequest and ManagedServiceAccount tokens
  [/eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, CENSOR],
  // bootstrap tokens (kubeadm format <id>.<secret>)
  [/\b[a-z0-9]{6}\.[a-z0-9]{16}\b/g, CENSOR],
  // Authorization / Proxy-Authorization header values, and anything else that looks like a bearer token
  [/(authorization\\?"?\s*[:=]\s*\\?"?\s*(?:Bearer|Basic)?\s*)[^\s"\\,]+/gi, `$1${CENSOR}`],
  [/\b(Bearer\s+)[A-Za-z0-9._~+/=-]{16,}/gi, `$1${CENSOR}`],
  // `token: …` / `"password":"…"` inside text (kubeconfig YAML, JSON bodies in error messages)
  [/(\b(?:token|password)\\?"?\s*:\s*\\?"?)[^\s"\\,]+/gi, `$1${CENSOR}`],
  // user:password@ in any URL (proxy URLs above all)
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^/\s"@]+@/gi, `$1${CENSOR}@`],
];

/** `text` with every credential-shaped part (see SECRET_PATTERNS) replaced by `[redacted]`. */
export function redactSecrets(text: string): string {
  let out = text;
  for (const [pattern, replacement] of SECRET_PATTERNS) out = out.replace(pattern, replacement);
  return out;
}

/** The options of every tether logger (exported so tests can build one on their own stream). */
export const LOG_OPTIONS: LoggerOptions = {
  level,
  base: undefined,
  redact: { paths: REDACTED_PATHS, censor: CENSOR },
  hooks: { streamWrite: redactSecrets },
};

export const rootLogger: Logger = pino(LOG_OPTIONS);

/** A child logger for one component, e.g. logger('proxy-server', { cluster: 'cluster1' }). */
export function logger(component: string, bindings: Record<string, unknown> = {}): Logger {
  return rootLogger.child({ component, ...bindings });
}
