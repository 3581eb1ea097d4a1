// The user-server's routing (pure): which cluster a path names, what its apiserver gets, and the
// paths refused before anything is dialled.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  hasBearerToken,
  userServerPort,
  userServerRoute,
  userServerServiceName,
} from '../../src/gateway/index.ts';

describe('userServerRoute', () => {
  it('takes the first segment as the cluster and passes the rest and the query on as sent', () => {
    expect(userServerRoute('/cluster1/api/v1/namespaces?limit=500&labelSelector=a%3Db')).toEqual({
      ok: true,
      cluster: 'cluster1',
      path: '/api/v1/namespaces',
      query: 'limit=500&labelSelector=a%3Db',
    });
    expect(userServerRoute('/cluster1')).toMatchObject({ ok: true, cluster: 'cluster1', path: '/' });
    expect(userServerRoute('/cluster1/')).toMatchObject({ ok: true, path: '/' });
    // encoded characters in the apiserver path stay as they were (the apiserver decodes them)
    expect(userServerRoute('/c1/api/v1/namespaces/a%20b')).toMatchObject({
      path: '/api/v1/namespaces/a%20b',
    });
  });

  it('refuses a cluster segment that is not a DNS label as written', () => {
    for (const path of [
      '/Cluster1/api',
      '/c1%2f..%2fc2/api',
      '/c_1/api',
      '/-c/api',
      `/${'a'.repeat(64)}/api`,
    ])
      expect(userServerRoute(path)).toMatchObject({ ok: false, code: 400 });
    expect(userServerRoute('//api')).toMatchObject({ ok: false, code: 404 });
    expect(userServerRoute('api')).toMatchObject({ ok: false, code: 400 });
  });

  it('refuses dot segments, plain or percent-encoded, anywhere in the path', () => {
    for (const path of ['/c1/../c2/api', '/c1/./api', '/c1/api/%2e%2e/x', '/c1/%2E/api', '/c1/api/.%2e'])
      expect(userServerRoute(path)).toMatchObject({ ok: false, code: 400 });
    // dots inside a segment are names, not dot segments
    expect(userServerRoute('/c1/apis/apps.example.io/v1')).toMatchObject({ ok: true });
  });

  it("refuses cluster-proxy's service-proxy form with a message naming the alternatives", () => {
    const r = userServerRoute('/c1/api/v1/namespaces/ns/services/https:web:443/proxy-service/metrics');
    expect(r).toMatchObject({ ok: false, code: 400 });
    expect(r.ok ? '' : r.message).toMatch(/CONNECT <export>.<cluster>:<port>/);
    // the apiserver's own service proxy is an ordinary apiserver path
    expect(userServerRoute('/c1/api/v1/namespaces/ns/services/web:80/proxy/metrics')).toMatchObject({
      ok: true,
    });
  });

  it('pins OCM names: Service cluster-proxy-addon-user, port 9092', () => {
    expect([userServerServiceName, userServerPort]).toEqual(['cluster-proxy-addon-user', 9092]);
  });
});

describe('hasBearerToken', () => {
  const req = (authorization?: string) =>
    ({ headers: authorization ? { authorization } : {} }) as IncomingMessage;
  it('accepts only "Bearer <token>"', () => {
    expect(hasBearerToken(req('Bearer abc.def'))).toBe(true);
    expect(hasBearerToken(req('bearer abc'))).toBe(true);
    for (const v of [undefined, 'Bearer', 'Bearer ', 'Basic YTpi', 'abc'])
      expect(hasBearerToken(req(v))).toBe(false);
  });
});
