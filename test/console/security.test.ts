// The console's trust checks on their own: which Host, Origin, token and path each lets through.
import { describe, expect, it } from 'vitest';
import {
  checkRequestPath,
  hostAllowed,
  isApiPath,
  isLoopbackAddress,
  newConsoleToken,
  originAllowed,
  tokenMatches,
} from '../../src/console/security.ts';

describe('Host (DNS rebinding)', () => {
  it('accepts the loopback names with the console port', () => {
    for (const host of ['127.0.0.1:8001', 'localhost:8001', '[::1]:8001', 'LOCALHOST:8001']) {
      expect(hostAllowed(host, 8001), host).toBe(true);
    }
  });

  it('refuses a rebound name, another port, no port, or no Host', () => {
    for (const host of [
      'attacker.example:8001',
      '127.0.0.1:8002',
      '127.0.0.1',
      'localhost',
      '127.0.0.2:8001',
      '',
    ]) {
      expect(hostAllowed(host, 8001), host).toBe(false);
    }
    expect(hostAllowed(undefined, 8001)).toBe(false);
  });
});

describe('Origin and Sec-Fetch-Site (cross-site requests)', () => {
  it('accepts no Origin and the console its own origin', () => {
    expect(originAllowed(undefined, undefined, '127.0.0.1:8001')).toBe(true);
    expect(originAllowed('http://127.0.0.1:8001', 'same-origin', '127.0.0.1:8001')).toBe(true);
    expect(originAllowed(undefined, 'none', 'localhost:8001')).toBe(true);
  });

  it('refuses a foreign origin, the same host over https, "null", and any cross-site request', () => {
    expect(originAllowed('http://attacker.example', undefined, '127.0.0.1:8001')).toBe(false);
    expect(originAllowed('https://127.0.0.1:8001', undefined, '127.0.0.1:8001')).toBe(false);
    expect(originAllowed('http://localhost:8001', undefined, '127.0.0.1:8001')).toBe(false);
    expect(originAllowed('null', undefined, '127.0.0.1:8001')).toBe(false);
    expect(originAllowed(undefined, 'cross-site', '127.0.0.1:8001')).toBe(false);
    expect(originAllowed('http://127.0.0.1:8001', 'cross-site', '127.0.0.1:8001')).toBe(false);
  });
});

describe('console token', () => {
  it('is 32 random bytes in base64url, new every time', () => {
    const a = newConsoleToken();
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(a, 'base64url')).toHaveLength(32);
    expect(newConsoleToken()).not.toBe(a);
  });

  it('matches only itself: not a prefix, another token, an empty or repeated header', () => {
    const token = newConsoleToken();
    expect(tokenMatches(token, token)).toBe(true);
    expect(tokenMatches(token.slice(0, -1), token)).toBe(false);
    expect(tokenMatches(`${token}x`, token)).toBe(false);
    expect(tokenMatches(newConsoleToken(), token)).toBe(false);
    expect(tokenMatches('', token)).toBe(false);
    expect(tokenMatches(undefined, token)).toBe(false);
    expect(tokenMatches([token, token], token)).toBe(false);
    expect(tokenMatches('', '')).toBe(false);
  });
});

describe('request paths', () => {
  it('splits path and query and keeps them as sent', () => {
    expect(checkRequestPath('/apis/work.open-cluster-management.io/v1/manifestworks?watch=1&x=%2F')).toEqual({
      ok: true,
      path: '/apis/work.open-cluster-management.io/v1/manifestworks',
      query: '?watch=1&x=%2F',
    });
    expect(checkRequestPath('/')).toEqual({ ok: true, path: '/', query: '' });
  });

  it('refuses dot segments, encoded separators and dots, backslashes and control characters', () => {
    for (const target of [
      '/api/../apis',
      '/api/./v1',
      '/apis/..',
      '/api/v1/namespaces/%2e%2e/secrets',
      '/api%2Fv1',
      '/api/v1/%2E',
      '/api/v1%5csecrets',
      '/api\\v1',
      '/api/v1\r\nX: y',
      'api/v1',
      'http://127.0.0.1/api',
      '*',
    ]) {
      expect(checkRequestPath(target).ok, target).toBe(false);
    }
  });

  it('forwards exactly /api, /apis, /version and what is under /api/ and /apis/', () => {
    for (const p of [
      '/api',
      '/apis',
      '/version',
      '/api/v1/events',
      '/apis/cluster.open-cluster-management.io/v1',
    ]) {
      expect(isApiPath(p), p).toBe(true);
    }
    for (const p of [
      '/',
      '/index.html',
      '/app.js',
      '/apix',
      '/api-docs',
      '/version/x',
      '/healthz',
      '/openapi/v2',
    ]) {
      expect(isApiPath(p), p).toBe(false);
    }
  });
});

describe('listen addresses', () => {
  it('are loopback only', () => {
    expect(isLoopbackAddress('127.0.0.1')).toBe(true);
    expect(isLoopbackAddress('::1')).toBe(true);
    expect(isLoopbackAddress('localhost')).toBe(true);
    for (const a of ['0.0.0.0', '::', '192.168.1.5', '127.0.0.2', 'example.com'])
      expect(isLoopbackAddress(a), a).toBe(false);
  });
});
