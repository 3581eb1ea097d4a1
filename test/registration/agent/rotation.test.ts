// The renewal moment follows the certificate's own lifetime, so a ten-minute test certificate
// rotates as a one-year one does, only sooner.
import { describe, expect, it } from 'vitest';
import { jitteredRotationFraction, rotationTime } from '../../../src/registration/agent/rotation.ts';

describe('certificate rotation time', () => {
  it('renews with the given fraction of the lifetime left', () => {
    const notBefore = new Date('2030-01-01T00:00:00Z');
    const notAfter = new Date('2030-01-01T00:10:00Z');
    expect(rotationTime(notBefore, notAfter, 0.2).toISOString()).toBe('2030-01-01T00:08:00.000Z');
    expect(rotationTime(notBefore, notAfter, 0.25).toISOString()).toBe('2030-01-01T00:07:30.000Z');
  });

  it('jitters between 20% and 25% as OCM does', () => {
    expect(jitteredRotationFraction(() => 0)).toBe(0.2);
    expect(jitteredRotationFraction(() => 0.999999)).toBeCloseTo(0.25, 5);
    for (let i = 0; i < 100; i++) {
      const f = jitteredRotationFraction();
      expect(f).toBeGreaterThanOrEqual(0.2);
      expect(f).toBeLessThan(0.25);
    }
  });
});
