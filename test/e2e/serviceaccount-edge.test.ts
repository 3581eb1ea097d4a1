// ManagedServiceAccount cases that must fail clearly or adapt: a validity that is not a Go duration,
// a validity shortened after the fact, token audiences from the MSA annotation, and a managed
// apiserver without TokenRequest (simulated by a TLS front that answers 404 on `…/token`).
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeconfigFromParts, ResourceClient } from '../../src/kube/index.ts';
import { issueCertificate, loadCertificateAuthority } from '../../src/pki/index.ts';
import { type TokenReview, tokenReviewResource } from '../../src/serviceaccount/core.ts';
import { decodeTokenClaims, tokenAudiencesAnnotation } from '../../src/serviceaccount/index.ts';
import {
  createMsa,
  env,
  hubSecrets,
  type MsaCluster,
  managedAdmin,
  msaCluster,
  msas,
  onCleanup,
  runCleanups,
  startAgent,
  waitForCondition,
  waitForProjection,
} from './fixtures/serviceaccount.ts';

const reviews = new ResourceClient<TokenReview>(managedAdmin, tokenReviewResource);

let cluster: MsaCluster;

beforeAll(async () => {
  cluster = await msaCluster('msa-edge');
  await startAgent(cluster);
});
afterAll(runCleanups);

describe('validity', () => {
  it('a validity that is not a Go duration is reported on the MSA, and fixing it gets a token', async () => {
    const msa = await createMsa(cluster, { rotation: { validity: 'soon' } });
    const name = msa.metadata.name;
    const failed = await waitForCondition(cluster, name, { type: 'TokenReported', status: 'False' });
    const condition = failed.status?.conditions?.find((c) => c.type === 'TokenReported');
    expect(condition?.reason).toBe('TokenReportFailed');
    expect(condition?.message).toContain('spec.rotation.validity: invalid duration "soon"');
    expect(await hubSecrets.get(name, cluster.name)).toBeUndefined();

    await msas.patchMerge(name, { spec: { rotation: { validity: '1h' } } }, cluster.name);
    const { token } = await waitForProjection(cluster, name);
    const claims = decodeTokenClaims(token);
    expect((claims?.exp ?? 0) - (claims?.iat ?? 0)).toBe(3600);
  });

  it('a shortened validity takes effect at once', async () => {
    const msa = await createMsa(cluster, { rotation: { validity: '24h' } });
    const name = msa.metadata.name;
    const first = await waitForProjection(cluster, name);
    await msas.patchMerge(name, { spec: { rotation: { validity: '10m' } } }, cluster.name);
    const second = await waitForProjection(cluster, name, { notToken: first.token });
    const claims = decodeTokenClaims(second.token);
    expect((claims?.exp ?? 0) - (claims?.iat ?? 0)).toBe(600);
  });
});

describe('audiences', () => {
  it('the token-audiences annotation sets the audiences of the token', async () => {
    const msa = await createMsa(
      cluster,
      {},
      { annotations: { [tokenAudiencesAnnotation]: 'tether-test, https://vault.example' } },
    );
    const { token } = await waitForProjection(cluster, msa.metadata.name);
    expect(decodeTokenClaims(token)?.aud.sort()).toEqual(['https://vault.example', 'tether-test']);
    const forUs = await reviews.create({ metadata: {}, spec: { token, audiences: ['tether-test'] } });
    expect(forUs.status?.authenticated).toBe(true);
    // Not for the apiserver's own audience: it must not accept the token as a plain API credential.
    const forApiserver = await reviews.create({ metadata: {}, spec: { token } });
    expect(forApiserver.status?.authenticated ?? false).toBe(false);
  });
});

describe('a managed apiserver without TokenRequest', () => {
  it('fails fast: TokenReported False with a message saying what the apiserver lacks', async () => {
    const front = await startTokenlessFront();
    onCleanup(() => front.close());
    const other = await msaCluster('msa-notoken');
    await startAgent(other, { managedKubeConfig: front.kubeconfig });
    const msa = await createMsa(other);
    const started = Date.now();
    const failed = await waitForCondition(other, msa.metadata.name, {
      type: 'TokenReported',
      status: 'False',
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    const message = failed.status?.conditions?.find((c) => c.type === 'TokenReported')?.message ?? '';
    expect(message).toContain('does not serve TokenRequest');
    expect(message).toContain('--service-account-signing-key-file');
    expect(front.tokenRequests()).toBeGreaterThan(0);
  });
});

/**
 * An HTTPS front for cluster1 (serving certificate from cluster1's CA) that forwards everything
 * with cluster1's admin credentials, except TokenRequests, which get the apiserver's 404.
 */
async function startTokenlessFront() {
  const ca = await loadCertificateAuthority(
    readFileSync(env.cluster1.caCertPath, 'utf8'),
    readFileSync(env.cluster1.caKeyPath, 'utf8'),
  );
  const serving = await issueCertificate(ca, {
    commonName: 'tokenless',
    usage: 'server',
    ipAddresses: ['127.0.0.1'],
  });
  const user = managedAdmin.getCurrentUser();
  const b64 = (v: string | undefined) => Buffer.from(v ?? '', 'base64').toString('utf8');
  const upstream = new URL(env.cluster1.apiserverUrl);
  let tokenRequests = 0;
  const server = createHttpsServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    if (req.method === 'POST' && /\/serviceaccounts\/[^/]+\/token(\?|$)/.test(req.url ?? '')) {
      tokenRequests++;
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          message: 'the server could not find the requested resource',
          reason: 'NotFound',
          code: 404,
        }),
      );
      return;
    }
    const out = httpsRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: upstream.host },
        ca: ca.certPem,
        cert: b64(user?.certData),
        key: b64(user?.keyData),
      },
      (answer: IncomingMessage) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    res.on('close', () => out.destroy());
    req.pipe(out);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const kubeconfig = kubeconfigFromParts({
    name: 'tokenless',
    server: `https://127.0.0.1:${port}`,
    caPem: ca.certPem,
    certPem: b64(user?.certData),
    keyPem: b64(user?.keyData),
  });
  return {
    kubeconfig,
    tokenRequests: () => tokenRequests,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
