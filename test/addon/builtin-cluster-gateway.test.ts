// The cluster-gateway addon: nothing runs on the managed cluster; it delivers the RBAC the
// gateway's ServiceAccount needs there, and its Available follows the ManagedServiceAccount's token.
import { describe, expect, it } from 'vitest';
import { clusterGatewayAddon } from '../../src/addon/builtin/cluster-gateway.ts';
import { clusterGatewayAvailability } from '../../src/addon/builtin/cluster-gateway-hub.ts';
import type { ManagedServiceAccount } from '../../src/api/authentication.ts';
import { gatewayManagedClusterRbac } from '../../src/gateway/rbac.ts';
import { render, renderContext } from './builtin-fixtures.ts';

describe('cluster-gateway addon', () => {
  it("delivers the gateway's managed-cluster RBAC for ServiceAccount tether-gateway, and no agent", async () => {
    const objects = await render(clusterGatewayAddon(), renderContext('cluster-gateway', 'cluster1'));
    expect(objects).toEqual(
      gatewayManagedClusterRbac({
        serviceAccount: 'tether-gateway',
        namespace: 'open-cluster-management-agent-addon',
      }),
    );
    expect(objects.map((o) => o.kind)).not.toContain('Deployment');
    const addon = clusterGatewayAddon();
    expect(addon.registration).toBeUndefined();
    expect(addon.health).toEqual({ type: 'Customized' });
  });

  it('follows the identity mode and the namespace the ServiceAccounts live in', async () => {
    const objects = await render(
      clusterGatewayAddon({ identityMode: 'shared', serviceAccountNamespace: 'msa-ns' }),
      renderContext('cluster-gateway', 'cluster1'),
    );
    expect(objects).toEqual(
      gatewayManagedClusterRbac(
        { serviceAccount: 'tether-gateway', namespace: 'msa-ns' },
        { identityMode: 'shared' },
      ),
    );
  });

  it("Available follows the ManagedServiceAccount's TokenReported", () => {
    const msa = (status?: 'True' | 'False'): ManagedServiceAccount => ({
      apiVersion: 'authentication.open-cluster-management.io/v1beta1',
      kind: 'ManagedServiceAccount',
      metadata: { name: 'tether-gateway', namespace: 'cluster1' },
      status: status
        ? {
            conditions: [
              {
                type: 'TokenReported',
                status,
                reason: status === 'True' ? 'TokenReported' : 'TokenReportFailed',
                message: 'no TokenRequest API',
                lastTransitionTime: '2026-01-01T00:00:00Z',
              },
            ],
          }
        : {},
    });
    expect(clusterGatewayAvailability('tether-gateway', msa('True'))).toMatchObject({
      type: 'Available',
      status: 'True',
      reason: 'ManagedServiceAccountTokenReported',
    });
    const failed = clusterGatewayAvailability('tether-gateway', msa('False'));
    expect(failed).toMatchObject({ status: 'False', reason: 'ManagedServiceAccountTokenNotReported' });
    expect(failed.message).toContain('no TokenRequest API');
    expect(clusterGatewayAvailability('tether-gateway', msa())).toMatchObject({ status: 'Unknown' });
    expect(clusterGatewayAvailability('tether-gateway', undefined).message).toContain(
      'managed-serviceaccount addon',
    );
  });
});
