import { createServer } from 'node:net';
import { ApiException } from '@kubernetes/client-node';
import { fetch } from 'undici';
import { describe, expect, it } from 'vitest';
import { ApiError, InvalidArgumentError, TetherError, TimeoutError } from '../../src/errors.ts';
import { httpStatusOf, isConnectivityError } from '../../src/kube/connectivity-errors.ts';

/** The error a real fetch to a port nobody listens on fails with. */
async function refusedFetchError(): Promise<unknown> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return fetch(`http://127.0.0.1:${port}/`).then(
    () => undefined,
    (err: unknown) => err,
  );
}

describe('isConnectivityError', () => {
  it('is true for a refused connection (undici "fetch failed" with ECONNREFUSED inside)', async () => {
    const err = await refusedFetchError();
    expect(err).toBeInstanceOf(TypeError);
    expect(isConnectivityError(err)).toBe(true);
  });

  it('is true for timeouts: ours, AbortSignal.timeout and client-node Watch', () => {
    expect(isConnectivityError(new TimeoutError('list: no answer within 30000 ms'))).toBe(true);
    expect(
      isConnectivityError(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    ).toBe(true);
  });

  it('is true for socket errors by code, also one level down in cause', () => {
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    expect(isConnectivityError(reset)).toBe(true);
    const wrapped = new Error('request failed', {
      cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
    });
    expect(isConnectivityError(wrapped)).toBe(true);
  });

  it('is false for anything the server answered, whatever the status', () => {
    for (const status of [401, 403, 404, 410, 429, 500, 503]) {
      expect(isConnectivityError(new ApiError(status, 'X', 'answered'))).toBe(false);
      expect(isConnectivityError(new ApiException(status, 'Unsuccessful HTTP Request', '', {}))).toBe(false);
      expect(
        isConnectivityError(Object.assign(new Error('Service Unavailable'), { statusCode: status })),
      ).toBe(false);
    }
  });

  it('is false for our own decisions and for programming errors', () => {
    expect(isConnectivityError(new TetherError('TETHER_LIMIT_EXCEEDED', 'too many objects'))).toBe(false);
    expect(isConnectivityError(new InvalidArgumentError('bad'))).toBe(false);
    expect(isConnectivityError(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBe(
      false,
    );
    expect(isConnectivityError(undefined)).toBe(false);
    expect(isConnectivityError('ECONNRESET')).toBe(false);
  });
});

describe('httpStatusOf', () => {
  it('reads the status of ApiError, ApiException and client-node Watch errors', () => {
    expect(httpStatusOf(new ApiError(403, 'Forbidden', 'no'))).toBe(403);
    expect(httpStatusOf(new ApiException(404, 'x', '', {}))).toBe(404);
    expect(httpStatusOf(Object.assign(new Error('Gone'), { statusCode: 410 }))).toBe(410);
    expect(httpStatusOf(new Error('x'))).toBeUndefined();
  });
});
