// No token, key or password reaches a log line: field redaction and the text scrubber of src/log.ts,
// on a real pino logger built with tether's options. (The end-to-end check is in test/e2e/up.test.ts.)
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { LOG_OPTIONS, redactSecrets } from '../src/log.ts';

const pem =
  '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIFakeKeyMaterial0123456789\n-----END EC PRIVATE KEY-----\n';
const jwt = 'eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.eyJzdWIiOiJzeXN0ZW06c2E6eCJ9.c2lnbmF0dXJlLWJ5dGVz';
const bootstrapToken = 'abcdef.0123456789abcdef';

/** A logger with tether's options writing into an array of lines. */
function capture(): { log: pino.Logger; text: () => string } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { log: pino({ ...LOG_OPTIONS, level: 'trace' }, stream), text: () => lines.join('') };
}

describe('log redaction', () => {
  it('a token, key or password in a credential-named field never reaches the log line', () => {
    const { log, text } = capture();
    log.info(
      {
        token: jwt,
        headers: { authorization: `Bearer ${jwt}`, 'proxy-authorization': 'Basic YWxpY2U6czNjcmV0' },
        tls: { keyPem: pem, privateKey: pem, password: 'hunter2' },
        kubeconfig: 'apiVersion: v1',
        key: 'open-cluster-management-agent/hub-kubeconfig-secret',
      },
      'fields',
    );
    const out = text();
    for (const secret of [jwt, 'MHcCAQEE', 'YWxpY2U6czNjcmV0', 'hunter2', 'apiVersion: v1']) {
      expect(out).not.toContain(secret);
    }
    // object keys (ns/name) stay readable: they are not credentials
    expect(out).toContain('open-cluster-management-agent/hub-kubeconfig-secret');
  });

  it('a token or key inside an error message, stack or free text never reaches the log line', () => {
    const { log, text } = capture();
    const kubeconfigYaml = `users:\n- user:\n    client-key-data: ${Buffer.from(pem).toString('base64')}\n    token: opaque-static-token\n`;
    log.error({ err: new Error(`TokenRequest answered ${jwt}`) }, `join with ${bootstrapToken}`);
    log.warn({ body: kubeconfigYaml }, 'kubeconfig follows');
    log.warn(`proxy http://alice:s3cret@squid.corp:3128 refused; key was ${pem}`);
    log.info({ detail: '{"kind":"TokenRequest","status":{"token":"opaque-json-token"}}' }, 'response');
    log.info('sent Authorization: Bearer opaque-bearer-token-0123456789');
    const out = text();
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
