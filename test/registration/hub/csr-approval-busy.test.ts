// The CSR approver's production pacing for a cluster that already has a decision in progress
// (src/registration/hub/csr-approval.ts): its other CSRs go back to the queue with a doubling
// delay instead of holding a worker, so one cluster's flood never starves the others.
import { describe, expect, it } from 'vitest';
import { clusterBusyRetryMaxMs, clusterBusyRetryMs } from '../../../src/registration/hub/csr-approval.ts';

describe('CSR approver pacing of a busy cluster', () => {
  it('retries a busy cluster’s CSR after 50 ms, doubling up to 5 s', () => {
    expect({ clusterBusyRetryMs, clusterBusyRetryMaxMs }).toEqual({
      clusterBusyRetryMs: 50,
      clusterBusyRetryMaxMs: 5_000,
    });
  });
});
