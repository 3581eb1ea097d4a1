// konnectivity's own Go client against tether's gRPC (and HTTP-CONNECT) frontend: apiserver-network-proxy's
// `test-client` (konnectivity-client's single-use gRPC tunnel, the library cluster-gateway and
// clusteradm's `proxy` verbs use) dials `<cluster>:443` through the shared environment's
// proxy-server with a proxy-client certificate and sends an HTTP request down the tunnel;
// cluster1's kube-apiserver answers it (an HTTP request on its HTTPS port: its own 400 text, which
// only that apiserver can have written). A certificate the hub grants nothing is refused, and the
// refusal reaches the Go client as DIAL_RSP's error. The binary comes from OCM_BIN like the others
// (`konnectivity-test-client`: apiserver-network-proxy's cmd/test-client, built by the user).
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCertificate, loadCertificateAuthority } from '../../src/pki/index.ts';
import { ocmBinDir } from './fixtures/binaries.ts';
import { ocmEnv } from './fixtures/env.ts';
import { run } from './fixtures/processes.ts';

const env = ocmEnv();
const testClient = join(ocmBinDir(), 'konnectivity-test-client');
const frontend = new URL(env.tunnel.connectFrontendUrl);
let dir = '';

/** test-client through the frontend (gRPC or HTTP-CONNECT) to `<cluster>:443`, with the given client certificate files. */
function konnectivityRequest(cluster: string, certPath: string, keyPath: string, mode = 'grpc') {
  return run(testClient, [
    `--mode=${mode}`,
    `--proxy-host=${frontend.hostname}`,
    `--proxy-port=${frontend.port}`,
    `--ca-cert=${env.tunnel.hubCaPath}`,
    `--client-cert=${certPath}`,
    `--client-key=${keyPath}`,
    '--request-proto=http',
    `--request-host=${cluster}`,
    '--request-port=443',
    '--request-path=/version',
    '-v=4',
  ]);
}

beforeAll(() => {
  try {
    accessSync(testClient, constants.X_OK);
  } catch {
    throw new Error(
      `konnectivity's test client is missing or not executable at ${testClient}: build kubernetes-sigs/apiserver-network-proxy cmd/test-client there as konnectivity-test-client (or set OCM_BIN to its directory)`,
    );
  }
  dir = mkdtempSync(join(tmpdir(), 'tether-ocm-konnectivity-'));
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("konnectivity's Go client through tether's gRPC frontend", () => {
  it('reaches cluster1’s kube-apiserver with a proxy-client certificate (the apiserver answers down the tunnel)', async () => {
    const r = await konnectivityRequest(
      env.cluster1.name,
      env.tunnel.proxyClientCertPath,
      env.tunnel.proxyClientKeyPath,
    );
    expect({ code: r.code, tail: r.stderr.slice(-600) }).toEqual({ code: 0, tail: expect.any(String) });
    expect(r.stderr).toContain('Client sent an HTTP request to an HTTPS server');
  });

  it("reaches it the same way in konnectivity's http-connect mode (CONNECT <cluster>:443 on the same port)", async () => {
    const r = await konnectivityRequest(
      env.cluster1.name,
      env.tunnel.proxyClientCertPath,
      env.tunnel.proxyClientKeyPath,
      'http-connect',
    );
    expect({ code: r.code, tail: r.stderr.slice(-600) }).toEqual({ code: 0, tail: expect.any(String) });
    expect(r.stderr).toContain('Client sent an HTTP request to an HTTPS server');
  });

  it('a certificate the hub grants nothing is refused; the Go client gets the reason from DIAL_RSP', async () => {
    const caDir = dirname(env.tunnel.proxyClientCertPath);
    const ca = await loadCertificateAuthority(
      readFileSync(join(caDir, 'proxy-client-ca.crt'), 'utf8'),
      readFileSync(join(caDir, 'proxy-client-ca.key'), 'utf8'),
    );
    const nobody = await issueCertificate(ca, { commonName: 'konnectivity-nobody', usage: 'client' });
    const cert = join(dir, 'nobody.crt');
    const key = join(dir, 'nobody.key');
    writeFileSync(cert, nobody.certPem);
    writeFileSync(key, nobody.keyPem, { mode: 0o600 });
    const r = await konnectivityRequest(env.cluster1.name, cert, key);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/403 Forbidden: konnectivity-nobody may not get managedclusters\/proxy/);
  });
});
