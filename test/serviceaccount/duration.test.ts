// Go durations as OCM writes spec.rotation.validity, and kubectl's AGE column.
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.ts';
import { formatAge, formatGoDuration, parseGoDuration } from '../../src/serviceaccount/index.ts';

describe('parseGoDuration', () => {
  it.each([
    ['8640h0m0s', 8640 * 3_600_000],
    ['24h', 86_400_000],
    ['90m', 5_400_000],
    ['1h30m10s', 5_410_000],
    ['1.5h', 5_400_000],
    ['.5s', 500],
    ['660s', 660_000],
    ['300ms', 300],
    ['1500us', 1.5],
    ['1500µs', 1.5],
    ['2000000ns', 2],
    ['0', 0],
    ['+10m', 600_000],
    ['-1m', -60_000],
  ])('reads %s', (text, ms) => {
    expect(parseGoDuration(text)).toBeCloseTo(ms, 6);
  });

  it.each([
    '',
    '10',
    'h',
    '1d',
    '1h 30m',
    '1..5h',
    '.h',
    '-',
    'abc',
    '1hx',
    `${'9'.repeat(80)}h`,
    '999999999h',
  ])('refuses "%s" with a message naming the text', (text) => {
    expect(() => parseGoDuration(text)).toThrow(InvalidArgumentError);
    expect(() => parseGoDuration(text)).toThrow(/invalid duration/);
  });
});

describe('formatGoDuration', () => {
  it('writes what Go writes', () => {
    expect(formatGoDuration(8640 * 3600)).toBe('8640h0m0s');
    expect(formatGoDuration(600)).toBe('10m0s');
    expect(formatGoDuration(45)).toBe('45s');
    expect(formatGoDuration(0)).toBe('0s');
    expect(parseGoDuration(formatGoDuration(5410))).toBe(5_410_000);
  });
});

describe('formatAge (kubectl HumanDuration)', () => {
  it.each([
    [-5000, '<invalid>'],
    [-500, '0s'],
    [45_000, '45s'],
    [119_000, '119s'],
    [330_000, '5m30s'],
    [300_000, '5m'],
    [95 * 60_000, '95m'],
    [(3 * 60 + 5) * 60_000, '3h5m'],
    [20 * 3_600_000, '20h'],
    [(3 * 24 + 4) * 3_600_000, '3d4h'],
    [45 * 86_400_000, '45d'],
    [(3 * 365 + 10) * 86_400_000, '3y10d'],
    [9 * 365 * 86_400_000, '9y'],
  ])('%d ms → %s', (ms, text) => {
    expect(formatAge(ms)).toBe(text);
  });
});
