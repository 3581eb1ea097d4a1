import { describe, expect, it } from 'vitest';
import { buildTimestamp } from '../../src/image/build.ts';

describe('buildTimestamp (the time written into the image)', () => {
  it('is 0 without SOURCE_DATE_EPOCH, so builds of the same sources match', () => {
    expect(buildTimestamp({})).toBe('0');
    expect(buildTimestamp({ SOURCE_DATE_EPOCH: '' })).toBe('0');
  });

  it('follows SOURCE_DATE_EPOCH and refuses anything but seconds', () => {
    expect(buildTimestamp({ SOURCE_DATE_EPOCH: '1764000000' })).toBe('1764000000');
    expect(() => buildTimestamp({ SOURCE_DATE_EPOCH: '2026-11-25' })).toThrow(
      /SOURCE_DATE_EPOCH must be seconds/,
    );
  });
});
