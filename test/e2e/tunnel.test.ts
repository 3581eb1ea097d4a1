// Hub services reach managed clusters through the real tunnel processes: `tether proxy-server` on
// the hub, `tether proxy-agent` per cluster behind squid. Callers authenticate with a proxy-client
// certificate or a hub ServiceAccount token (TokenReview + SubjectAccessReview on the real hub).
import { readFileSync } from 'node:fs';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil } from '../../src/wait.ts';
import { testEnv } from './fixtures/env.ts';
import { adminKubeConfig, uniqueName } from './fixtures/helpers.ts';

const env = testEnv();
const frontend = new URL(env.tunnel.connectFrontendUrl);
const hubCa = readFileSync(env.tunnel.hubCaPath, 'utf8');

/** CONNECT through the frontend; resolves with the status and, on 200, the open socket. */
function connectThrough(
  authority: string,
  auth: { cert: true } | { token: string } | { none: true },
): Promise<{ status: number; socket: TLSSocket }> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      host: frontend.hostname,
      port: Number(frontend.port),
      ca: hubCa,
      ...('cert' in auth
        ? {
            cert: readFileSync(env.tunnel.proxyClientCertPath),
            key: readFileSync(env.tunnel.proxyClientKeyPath),
          }
        : {}),
    });
    socket.once('error', reject);
    socket.once('secureConnect', () => {
      const headers = 'token' in auth ? `Proxy-Authorization: Bearer ${auth.token}\r\n` : '';
      socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${headers}\r\n`);
    });
    let buf = '';
    const onData = (d: Buffer): void => {
      buf += d.toString('latin1');
      if (buf.includes('\r\n\r\n')) {
        socket.off('data', onData);
        resolve({ status: Number(buf.slice(9, 12)), socket });
      }
    };
    socket.on('data', onData);
  });
}

/** GET `path` from the managed apiserver over an established CONNECT tunnel (TLS verified). */
function getOverTunnel(socket: TLSSocket, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const tls = tlsConnect({ socket, ca: readFileSync(env.cluster1.caCertPath), servername: 'localhost' });
    tls.once('error', reject);
    let body = '';
    tls.once('secureConnect', () =>
      tls.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`),
    );
    tls.on('data', (d: Buffer) => {
      body += d.toString();
    });
    tls.once('end', () => resolve(body));
  });
}

describe('tunnel from the hub into cluster1 (real processes, agent behind squid)', () => {
  it('a hub service with a proxy-client certificate reaches cluster1 kube-apiserver with TLS verified end to end', async () => {
    const { status, socket } = await connectThrough('cluster1:443', { cert: true });
    expect(status).toBe(200);
    const response = await getOverTunnel(socket, '/version');
    expect(response).toMatch(/^HTTP\/1.1 200/);
    expect(response).toContain('"gitVersion": "v1.36.3"');
  });

  it('answers 503 for a cluster without an agent', async () => {
    const { status, socket } = await connectThrough('cluster9:443', { cert: true });
    expect(status).toBe(503);
    socket.destroy();
  });

  describe('bearer tokens', () => {
    const hub = adminKubeConfig(env.hub);
    const ns = uniqueName('hub-svc');
    const role = uniqueName('proxy-user');
    let token = '';
    beforeAll(async () => {
      const core = hub.makeApiClient(CoreV1Api);
      await core.createNamespace({ body: { metadata: { name: ns } } });
      await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'svc' } } });
      const tr = await core.createNamespacedServiceAccountToken({
        name: 'svc',
        namespace: ns,
        body: { spec: { audiences: [] } },
      });
      token = tr.status?.token ?? '';
    });
    afterAll(async () => {
      const rbac = hub.makeApiClient(RbacAuthorizationV1Api);
      await rbac.deleteClusterRoleBinding({ name: role }).catch(() => {});
      await rbac.deleteClusterRole({ name: role }).catch(() => {});
      await hub
        .makeApiClient(CoreV1Api)
        .deleteNamespace({ name: ns })
        .catch(() => {});
    });

    it('rejects an invalid token with 407, a valid one without RBAC with 403, and admits it once RBAC allows managedclusters/proxy', async () => {
      const invalid = await connectThrough('cluster1:443', { token: 'not-a-token' });
      expect(invalid.status).toBe(407);
      invalid.socket.destroy();
      const forbidden = await connectThrough('cluster1:443', { token });
      expect(forbidden.status).toBe(403);
      forbidden.socket.destroy();

      const rbac = hub.makeApiClient(RbacAuthorizationV1Api);
      await rbac.createClusterRole({
        body: {
          metadata: { name: role },
          rules: [
            {
              apiGroups: ['cluster.open-cluster-management.io'],
              resources: ['managedclusters/proxy'],
              resourceNames: ['cluster1'],
              verbs: ['get'],
            },
          ],
        },
      });
      await rbac.createClusterRoleBinding({
        body: {
          metadata: { name: role },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
          subjects: [{ kind: 'ServiceAccount', name: 'svc', namespace: ns }],
        },
      });
      // Denials are cached for 3 s, so the grant shows within that window.
      const admitted = await pollUntil(
        async () => {
          const r = await connectThrough('cluster1:443', { token });
          if (r.status !== 200) r.socket.destroy();
          return r.status === 200 ? r : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 1000, description: 'the token to be admitted after the RBAC grant' },
      );
      const response = await getOverTunnel(admitted.socket, '/version');
      expect(response).toMatch(/^HTTP\/1.1 200/);
      // The grant names cluster1 only.
      const other = await connectThrough('cluster2:443', { token });
      expect(other.status).toBe(403);
      other.socket.destroy();
    });
  });
});
