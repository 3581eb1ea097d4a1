// No token, key or password reaches a log line: tether's root logger (src/log.ts), run in a child
// process at trace level exactly as a tether process logs, is fed credentials in fields, error
// messages, stacks and free text; none of them may come out. (The end-to-end check, every log of a
// full `tether up`, is in test/e2e/up.test.ts.)
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { redactSecrets } from '../src/log.ts';

const logModule = fileURLToPath(new URL('../src/log.ts', import.meta.url));
const pem =
  '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIFakeKeyMaterial0123456789\n-----END EC PRIVATE KEY-----\n';
const jwt = 'eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.eyJzdWIiOiJzeXN0ZW06c2E6eCJ9.c2lnbmF0dXJlLWJ5dGVz';
const bootstrapToken = 'abcdef.0123456789abcdef';

/** Runs `body` (which may use `log`, a tether logger) in a child process; returns what it logged. */
function logged(body: string): string {
  const script = `import { logger } from ${JSON.stringify(logModule)};\nconst log = logger('test');\n${body}`;
  const run = spawnSync(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script],
    { env: { ...process.env, TETHER_LOG_LEVEL: 'trace' }, encoding: 'utf8', timeout: 15_000 },
  );
  expect(run.status, run.stderr).toBe(0);
  return run.stdout;
}

describe('log redaction', () => {
  it('a token, key or password in a credential-named field never reaches a log line', () => {
    const out = logged(`log.info({
      token: ${JSON.stringify(jwt)},
      headers: { authorization: 'Bearer opaque-bearer-0123456789', 'proxy-authorization': 'Basic YWxpY2U6czNjcmV0' },
      tls: { keyPem: ${JSON.stringify(pem)}, privateKey: 'raw-private-key-bytes', password: 'hunter2-hunter2' },
      kubeconfig: 'apiVersion: v1 kind: Config',
      key: 'open-cluster-management-agent/hub-kubeconfig-secret',
    }, 'fields');`);
    expect(out).toContain('"msg":"fields"');
    for (const secret of [
      jwt,
      'opaque-bearer',
      'YWxpY2U6czNjcmV0',
      'MHcCAQEE',
      'raw-private-key-bytes',
      'hunter2',
      'kind: Config',
    ]) {
      expect(out).not.toContain(secret);
    }
    // object keys (ns/name) stay readable: they are not credentials
    expect(out).toContain('open-cluster-management-agent/hub-kubeconfig-secret');
  });

  it('a token or key inside an error message, stack or free text never reaches a log line', () => {
    const keyData = Buffer.from(pem).toString('base64');
    const out = logged(`
      log.error({ err: new Error('TokenRequest answered ${jwt}') }, 'join with ${bootstrapToken}');
      log.warn({ body: 'users:\\n- user:\\n    client-key-data: ${keyData}\\n    token: opaque-static-token\\n' }, 'kubeconfig');
      log.warn('proxy http://alice:s3cret@squid.corp:3128 refused; key was ' + ${JSON.stringify(pem)});
      log.info({ detail: '{"kind":"TokenRequest","status":{"token":"opaque-json-token"}}' }, 'response');
      log.info('sent Authorization: Bearer opaque-bearer-token-0123456789');
    `);
    expect(out.split('\n').filter(Boolean)).toHaveLength(5);
    for (const secret of [
      jwt,
      bootstrapToken,
      'MHcCAQEE',
      'PRIVATE KEY',
      'LS0tLS1CRUdJTi',
      'opaque-static-token',
      'opaque-json-token',
      'opaque-bearer-token',
      's3cret',
    ]) {
      expect(out).not.toContain(secret);
    }
    expect(out).toContain('squid.corp:3128');
    expect(out).toContain('TokenRequest answered [redacted]');
  });

  it('leaves ordinary text alone', () => {
    const text =
      'forward proxy http://squid.corp:3128 requires authentication (407): put user:password in the proxy URL; ns/cluster1 key cluster1.kubeconfig';
    expect(redactSecrets(text)).toBe(text);
  });
});
