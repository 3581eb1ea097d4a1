// The addon conversion webhook in a cluster, as `tether init` installs it: every hub-controllers
// replica serves it behind OCM's Service cluster-manager-addon-webhook:9443, its serving certificate
// comes from the hub PKI (kept across runs, like the gateway's), and the ClusterManagementAddOn /
// ManagedClusterAddOn CRDs send conversions to that Service trusting that CA.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { hubManifests } from '../../src/install/hub.ts';
import { planHubInstall } from '../../src/install/hub-install.ts';
import { hubPki, type SecretLookup } from '../../src/install/hub-pki.ts';
import { hubNames, hubNamespace } from '../../src/install/names.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/index.ts';

type Obj = KubernetesObject & {
  spec: Record<string, unknown> & {
    template?: {
      metadata: { labels: Record<string, string> };
      spec: {
        containers: {
          args: string[];
          ports: { name: string; containerPort: number }[];
          volumeMounts: { name: string; mountPath: string }[];
        }[];
        volumes: { name: string; secret?: { secretName: string } }[];
      };
    };
  };
  stringData?: Record<string, string>;
};

const installOptions = {
  image: 'localhost/tether:test',
  imagePullPolicy: 'Never' as const,
  replicas: 2,
  agentEndpoint: { type: 'NodePort' as const, nodePort: 31091 },
};

describe('addon conversion webhook in the cluster', () => {
  it('runs in the hub controllers behind Service cluster-manager-addon-webhook:9443', () => {
    const objects = hubManifests({ ...installOptions, gatewayCaBundle: 'Q0E=' }) as Obj[];
    const controllers = objects.find(
      (o) => o.kind === 'Deployment' && o.metadata?.name === hubNames.controllers,
    );
    const pod = controllers!.spec.template!;
    const container = pod.spec.containers[0]!;
    expect(container.ports).toContainEqual({ name: 'webhook', containerPort: 9443 });
    expect(container.args).toContain('--webhook-port=9443');
    expect(container.args).toContain('--webhook-bind-address=0.0.0.0');
    const certArg = container.args.find((a) => a.startsWith('--webhook-tls-cert-file='))!;
    const keyArg = container.args.find((a) => a.startsWith('--webhook-tls-private-key-file='))!;
    // both files come from the webhook's Secret
    const mount = container.volumeMounts.find((m) => certArg.split('=')[1]!.startsWith(`${m.mountPath}/`));
    expect(mount).toBeDefined();
    expect(keyArg.split('=')[1]!.startsWith(`${mount!.mountPath}/`)).toBe(true);
    expect(pod.spec.volumes.find((v) => v.name === mount!.name)?.secret?.secretName).toBe(
      hubNames.addonWebhookTls,
    );

    const service = objects.find(
      (o) => o.kind === 'Service' && o.metadata?.name === 'cluster-manager-addon-webhook',
    );
    expect(service?.metadata?.namespace).toBe(hubNamespace);
    const selector = service!.spec['selector'] as Record<string, string>;
    for (const [k, v] of Object.entries(selector)) expect(pod.metadata.labels[k]).toBe(v);
    expect(service!.spec['ports']).toEqual([{ name: 'webhook', port: 9443, targetPort: 'webhook' }]);
  });

  it('has a serving certificate for the Service from its own CA, kept across runs', async () => {
    const agentCa = await createCertificateAuthority('agents');
    const first = await hubPki({
      proxyServerHosts: [],
      agentCaPem: agentCa.certPem,
      lookup: async () => undefined,
    });
    const secrets = new Map(first.objects.map((o) => [o.metadata?.name ?? '', (o as Obj).stringData]));
    const tls = secrets.get(hubNames.addonWebhookTls)!;
    const ca = new X509Certificate(Buffer.from(first.addonWebhookCaBundle, 'base64'));
    expect(new X509Certificate(tls['ca.crt']!).fingerprint256).toBe(ca.fingerprint256);
    const serving = new X509Certificate(tls['tls.crt']!);
    expect(serving.verify(ca.publicKey)).toBe(true);
    expect(serving.subjectAltName).toContain(`DNS:cluster-manager-addon-webhook.${hubNamespace}.svc`);
    expect(serving.checkPrivateKey(createPrivateKey(tls['tls.key']!))).toBe(true);

    const lookup: SecretLookup = async (name) => secrets.get(name);
    const second = await hubPki({ proxyServerHosts: [], agentCaPem: agentCa.certPem, lookup });
    expect(second.addonWebhookCaBundle).toBe(first.addonWebhookCaBundle);
    const kept = second.objects.find((o) => o.metadata?.name === hubNames.addonWebhookTls) as Obj;
    expect(kept.stringData?.['tls.crt']).toBe(tls['tls.crt']);
  });

  it('replaces a kept certificate (and its CA) that is about to expire', async () => {
    const agentCa = await createCertificateAuthority('agents');
    const oldCa = await createCertificateAuthority('old-webhook-ca');
    const expiring = await issueCertificate(oldCa, {
      commonName: 'x',
      usage: 'server',
      validitySeconds: 24 * 3600,
    });
    const lookup: SecretLookup = async (name) =>
      name === hubNames.addonWebhookTls
        ? { 'ca.crt': oldCa.certPem, 'tls.crt': expiring.certPem, 'tls.key': expiring.keyPem }
        : undefined;
    const pki = await hubPki({ proxyServerHosts: [], agentCaPem: agentCa.certPem, lookup });
    expect(pki.addonWebhookCaBundle).not.toBe(Buffer.from(oldCa.certPem).toString('base64'));
    const tls = (pki.objects.find((o) => o.metadata?.name === hubNames.addonWebhookTls) as Obj).stringData!;
    const serving = new X509Certificate(tls['tls.crt']!);
    expect(serving.verify(new X509Certificate(tls['ca.crt']!).publicKey)).toBe(true);
    expect(new Date(serving.validTo).getTime() - Date.now()).toBeGreaterThan(300 * 24 * 3600 * 1000);
  });

  it('points the two converting addon CRDs at the Service with that CA; AddOnDeploymentConfig needs none', async () => {
    const agentCa = await createCertificateAuthority('agents');
    const plan = await planHubInstall(
      { ...installOptions, proxyServerHosts: [], agentCaPem: agentCa.certPem },
      async () => undefined,
    );
    const pkiSecret = plan.objects.find((o) => o.metadata?.name === hubNames.addonWebhookTls) as Obj;
    const caBundle = Buffer.from(pkiSecret.stringData?.['ca.crt'] ?? '').toString('base64');
    const crd = (name: string) =>
      plan.objects.find((o) => o.kind === 'CustomResourceDefinition' && o.metadata?.name === name) as Obj;
    for (const plural of ['clustermanagementaddons', 'managedclusteraddons']) {
      const spec = crd(`${plural}.addon.open-cluster-management.io`).spec;
      expect(spec['conversion'], plural).toEqual({
        strategy: 'Webhook',
        webhook: {
          clientConfig: {
            service: {
              namespace: hubNamespace,
              name: 'cluster-manager-addon-webhook',
              path: '/convert',
              port: 9443,
            },
            caBundle,
          },
          conversionReviewVersions: ['v1', 'v1beta1'],
        },
      });
      const versions = spec['versions'] as { name: string; served: boolean; storage: boolean }[];
      expect(versions.map((v) => [v.name, v.served, v.storage])).toEqual([
        ['v1alpha1', true, true],
        ['v1beta1', true, false],
      ]);
    }
    expect(crd('addondeploymentconfigs.addon.open-cluster-management.io').spec['conversion']).toBeUndefined();
    expect(plan.addonConversionWebhook).toEqual({
      service: { namespace: hubNamespace, name: 'cluster-manager-addon-webhook', port: 9443 },
      caBundle,
    });
  });
});
