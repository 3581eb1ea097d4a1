import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ApiError, ApplyConflictError, ConflictError } from '../../src/errors.ts';
import {
  isAlreadyExists,
  isApplyConflict,
  isConflict,
  isForbidden,
  isNotFound,
  toApiError,
} from '../../src/kube/api-errors.ts';
import { formatMicroTime } from '../../src/kube/leader.ts';
import { apiVersionOf, resourcePath } from '../../src/kube/types.ts';

const secrets = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true };
const managedClusters = {
  group: 'cluster.open-cluster-management.io',
  version: 'v1',
  plural: 'managedclusters',
  kind: 'ManagedCluster',
  namespaced: false,
};

function status(code: number, reason: string, message: string): string {
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });
}

describe('resource paths', () => {
  it('puts the core group under /api and others under /apis', () => {
    expect(apiVersionOf(secrets)).toBe('v1');
    expect(apiVersionOf(managedClusters)).toBe('cluster.open-cluster-management.io/v1');
    expect(resourcePath(secrets, 'cluster1', 'hub-kubeconfig-secret')).toBe(
      '/api/v1/namespaces/cluster1/secrets/hub-kubeconfig-secret',
    );
    expect(resourcePath(secrets)).toBe('/api/v1/secrets');
    expect(resourcePath(managedClusters, 'ignored', 'cluster1', 'status')).toBe(
      '/apis/cluster.open-cluster-management.io/v1/managedclusters/cluster1/status',
    );
  });
});

describe('toApiError', () => {
  it('carries status, reason and the apiserver message from a Status body', () => {
    const exc = new ApiException(
      404,
      'Unsuccessful HTTP Request',
      status(404, 'NotFound', 'secrets "x" not found'),
      {},
    );
    const err = toApiError(exc, 'get Secret ns/x');
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 404, reason: 'NotFound', code: 'TETHER_API_ERROR' });
    expect(err?.message).toBe('get Secret ns/x: secrets "x" not found');
    expect(isNotFound(exc)).toBe(true);
    expect(isNotFound(err)).toBe(true);
  });

  it('tells a conflict from an already-exists, both 409', () => {
    const conflict = toApiError(
      new ApiException(409, 'x', status(409, 'Conflict', 'the object has been modified'), {}),
    );
    const exists = toApiError(new ApiException(409, 'x', status(409, 'AlreadyExists', 'already exists'), {}));
    expect(conflict).toBeInstanceOf(ConflictError);
    expect(isConflict(conflict)).toBe(true);
    expect(isAlreadyExists(conflict)).toBe(false);
    expect(exists).not.toBeInstanceOf(ConflictError);
    expect(isAlreadyExists(exists)).toBe(true);
    expect(isConflict(exists)).toBe(false);
  });

  it('tells a server-side apply field-manager conflict from a stale write, both 409 Conflict', () => {
    // Both bodies as kube-apiserver sends them; the first is what test/e2e/kube-helpers provokes.
    const applyBody = JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'Apply failed with 2 conflicts: conflict with "agent": .spec.leaseDurationSeconds\n' +
        'conflict with "admin" using cluster.open-cluster-management.io/v1: .spec.hubAcceptsClient',
      reason: 'Conflict',
      details: {
        causes: [
          {
            reason: 'FieldManagerConflict',
            message: 'conflict with "agent"',
            field: '.spec.leaseDurationSeconds',
          },
          {
            reason: 'FieldManagerConflict',
            message: 'conflict with "admin" using cluster.open-cluster-management.io/v1',
            field: '.spec.hubAcceptsClient',
          },
        ],
      },
      code: 409,
    });
    const staleBody = JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message:
        'Operation cannot be fulfilled on managedclusters.cluster.open-cluster-management.io "c1": the ' +
        'object has been modified; please apply your changes to the latest version and try again',
      reason: 'Conflict',
      details: { name: 'c1', group: 'cluster.open-cluster-management.io', kind: 'managedclusters' },
      code: 409,
    });
    const apply = new ApiException(409, 'Unsuccessful HTTP Request', applyBody, {});
    const stale = new ApiException(409, 'Unsuccessful HTTP Request', staleBody, {});

    const applyErr = toApiError(apply, 'patch ManagedCluster c1');
    expect(applyErr).toBeInstanceOf(ApplyConflictError);
    expect(applyErr).not.toBeInstanceOf(ConflictError);
    expect(applyErr).toMatchObject({ status: 409, reason: 'Conflict', code: 'TETHER_API_ERROR' });
    expect(applyErr?.message).toMatch(/^patch ManagedCluster c1: Apply failed with 2 conflicts/);
    expect((applyErr as ApplyConflictError).conflicts).toEqual([
      { field: '.spec.leaseDurationSeconds', message: 'conflict with "agent"' },
      {
        field: '.spec.hubAcceptsClient',
        message: 'conflict with "admin" using cluster.open-cluster-management.io/v1',
      },
    ]);
    expect(isApplyConflict(apply)).toBe(true);
    expect(isApplyConflict(applyErr)).toBe(true);
    expect(isConflict(apply)).toBe(false);
    expect(isConflict(applyErr)).toBe(false);
    expect(isAlreadyExists(apply)).toBe(false);

    const staleErr = toApiError(stale);
    expect(staleErr).toBeInstanceOf(ConflictError);
    expect(staleErr).not.toBeInstanceOf(ApplyConflictError);
    expect(isConflict(stale)).toBe(true);
    expect(isApplyConflict(stale)).toBe(false);
  });

  it('a 409 Conflict whose causes name no field manager stays an optimistic-concurrency conflict', () => {
    const body = {
      kind: 'Status',
      code: 409,
      reason: 'Conflict',
      message: 'x',
      details: { causes: [{ reason: 'FieldValueInvalid', field: 'spec' }, null, 'junk'] },
    };
    const err = toApiError(new ApiException(409, 'x', body, {}));
    expect(err).toBeInstanceOf(ConflictError);
    expect(isApplyConflict(err)).toBe(false);
  });

  it('falls back to the standard reason when the body is not a Status', () => {
    const err = toApiError(new ApiException(403, 'x', undefined, {}));
    expect(err).toMatchObject({ status: 403, reason: 'Forbidden' });
    expect(isForbidden(err)).toBe(true);
    expect(toApiError(new ApiException(502, 'x', 'Bad Gateway from squid', {}))?.message).toBe(
      'Bad Gateway from squid',
    );
  });

  it('leaves other errors alone', () => {
    expect(toApiError(new TypeError('fetch failed'))).toBeUndefined();
    expect(isNotFound(new Error('404'))).toBe(false);
  });
});

describe('formatMicroTime', () => {
  it('writes the six fractional digits metav1.MicroTime requires', () => {
    expect(formatMicroTime(new Date('2025-03-01T10:00:00.123Z'))).toBe('2025-03-01T10:00:00.123000Z');
  });
});
