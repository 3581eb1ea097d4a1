import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ApiError, ConflictError } from '../../src/errors.ts';
import {
  isAlreadyExists,
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
