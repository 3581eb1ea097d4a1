// The readers the console's views share: condition status, Kubernetes quantities, ages.
import { describe, expect, it } from 'vitest';
import { age, conditionStatus, formatCpu, formatMemory, parseQuantity } from '../../src/console/ui/format.ts';
import type { KubeObject } from '../../src/console/ui/types.ts';

const cluster = (status?: string): KubeObject => ({
  metadata: { name: 'c' },
  status: status ? { conditions: [{ type: 'ManagedClusterConditionAvailable', status }] } : {},
});

describe('conditionStatus', () => {
  it('is True, False, or Unknown for anything else, including a missing condition', () => {
    expect(conditionStatus(cluster('True'), 'ManagedClusterConditionAvailable')).toBe('True');
    expect(conditionStatus(cluster('False'), 'ManagedClusterConditionAvailable')).toBe('False');
    expect(conditionStatus(cluster('Unknown'), 'ManagedClusterConditionAvailable')).toBe('Unknown');
    expect(conditionStatus(cluster('maybe'), 'ManagedClusterConditionAvailable')).toBe('Unknown');
    expect(conditionStatus(cluster(), 'ManagedClusterConditionAvailable')).toBe('Unknown');
    expect(conditionStatus(undefined, 'ManagedClusterJoined')).toBe('Unknown');
  });
});

describe('quantities', () => {
  it('parse as the apiserver writes them', () => {
    expect(parseQuantity('3500m')).toBe(3.5);
    expect(parseQuantity('4')).toBe(4);
    expect(parseQuantity('8Gi')).toBe(8 * 2 ** 30);
    expect(parseQuantity('16266092Ki')).toBe(16266092 * 1024);
    expect(parseQuantity('2k')).toBe(2000);
    expect(parseQuantity('1e3')).toBe(1000);
    expect(parseQuantity('lots')).toBeUndefined();
    expect(parseQuantity('3Zi')).toBeUndefined();
    expect(parseQuantity(undefined)).toBeUndefined();
  });

  it('print as cores and binary bytes', () => {
    expect(formatCpu('3500m')).toBe('3.5');
    expect(formatCpu('250m')).toBe('0.25');
    expect(formatMemory('16266092Ki')).toBe('15.5 GiB');
    expect(formatMemory('512Mi')).toBe('512 MiB');
    expect(formatMemory(undefined)).toBe('–');
  });
});

describe('age', () => {
  it('says how long ago, or how far ahead', () => {
    const now = Date.parse('2026-01-01T12:00:00Z');
    expect(age('2026-01-01T11:59:30Z', now)).toBe('30s');
    expect(age('2026-01-01T11:15:00Z', now)).toBe('45m');
    expect(age('2025-12-30T12:00:00Z', now)).toBe('2d');
    expect(age('2026-01-01T15:00:00Z', now)).toBe('in 3h');
    expect(age(undefined, now)).toBe('–');
    expect(age('yesterday', now)).toBe('–');
  });
});
