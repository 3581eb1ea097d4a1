// A conversion webhook on the loopback interface with a CA of its own, for API servers on the same
// host (the local environment of `tether up --processes` and tests): returns the server and the
// url + caBundle the CRDs need. In a cluster the hub PKI issues the certificate instead.

import type { AddonConversionWebhook } from '../api/addon-crds.ts';
import type { Logger } from '../log.ts';
import { createCertificateAuthority, issueCertificate } from '../pki/index.ts';
import { type AddonConversionWebhookServer, startAddonConversionWebhook } from './conversion-webhook.ts';

export interface LoopbackConversionWebhook {
  server: AddonConversionWebhookServer;
  /** What hubCrds({ addonConversionWebhook }) takes. */
  webhook: AddonConversionWebhook;
}

/** Serves the conversion webhook on 127.0.0.1 (a free port unless given) with a fresh CA. */
export async function startLoopbackConversionWebhook(
  opts: { port?: number; log?: Logger } = {},
): Promise<LoopbackConversionWebhook> {
  const ca = await createCertificateAuthority('tether-addon-webhook-ca');
  const serving = await issueCertificate(ca, {
    commonName: 'cluster-manager-addon-webhook',
    usage: 'server',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
  });
  const server = await startAddonConversionWebhook({
    host: '127.0.0.1',
    port: opts.port ?? 0,
    certPem: serving.certPem,
    keyPem: serving.keyPem,
    log: opts.log,
  });
  return {
    server,
    webhook: {
      url: `https://127.0.0.1:${server.port}`,
      caBundle: Buffer.from(ca.certPem).toString('base64'),
    },
  };
}
