// The words OCM's agent uses for its certificate on the hub: condition message times as Go prints
// a time.Time, event durations as Go prints a time.Duration.
import { describe, expect, it } from 'vitest';
import {
  certificateRotatedCondition,
  goDurationString,
  goTimeString,
} from '../../../src/registration/agent/certificate-reporting.ts';
import { pendingClusterCsrs } from '../../../src/registration/agent/csr.ts';
import type { CertificateSigningRequest } from '../../../src/registration/agent/kinds.ts';

describe('certificate reporting', () => {
  it('says ClusterCertificateRotated True / ClientCertificateUpdated with the validity as OCM does', () => {
    const c = certificateRotatedCondition(
      new Date('2025-05-20T08:47:59Z'),
      new Date('2026-05-20T08:47:59.512Z'),
    );
    expect(c).toEqual({
      type: 'ClusterCertificateRotated',
      status: 'True',
      reason: 'ClientCertificateUpdated',
      message:
        'client certificate rotated starting from 2025-05-20 08:47:59 +0000 UTC to 2026-05-20 08:47:59 +0000 UTC',
    });
    expect(goTimeString(new Date('2024-01-02T03:04:05Z'))).toBe('2024-01-02 03:04:05 +0000 UTC');
  });

  it('prints durations as Go does', () => {
    expect(goDurationString(0)).toBe('0s');
    expect(goDurationString(45_400)).toBe('45s');
    expect(goDurationString(125_000)).toBe('2m5s');
    expect(goDurationString(3_723_000)).toBe('1h2m3s');
  });
});

describe('pending CSR limit', () => {
  const csr = (
    name: string,
    labels: Record<string, string>,
    conditions: string[] = [],
  ): CertificateSigningRequest => ({
    metadata: { name, labels },
    spec: { request: '', signerName: 'kubernetes.io/kube-apiserver-client', usages: [] },
    status: { conditions: conditions.map((type) => ({ type, status: 'True' })) },
  });
  const label = 'open-cluster-management.io/cluster-name';

  it('counts only the cluster’s own pending CSRs (not approved, denied, add-on or other clusters’)', () => {
    const list = [
      csr('c1-a', { [label]: 'c1' }),
      csr('c1-b', { [label]: 'c1' }),
      csr('c1-c', { [label]: 'c1' }, ['Approved']),
      csr('c1-d', { [label]: 'c1' }, ['Denied']),
      csr('addon-c1-x-1', { [label]: 'c1', 'open-cluster-management.io/addon-name': 'x' }),
      csr('c2-a', { [label]: 'c2' }),
      csr('other', { [label]: 'c1' }),
    ];
    expect(pendingClusterCsrs(list, 'c1')).toBe(2);
  });
});
