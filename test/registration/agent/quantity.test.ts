// Capacity sums must read like apimachinery's: OCM's Go agent and ours report the same text.
import { describe, expect, it } from 'vitest';
import { formatQuantity, parseQuantity, sumResourceLists } from '../../../src/registration/agent/quantity.ts';

const canonical = (text: string) => formatQuantity(parseQuantity(text));

describe('resource quantities', () => {
  it('prints quantities the way apimachinery canonicalises them', () => {
    expect(canonical('4')).toBe('4');
    expect(canonical('500m')).toBe('500m');
    expect(canonical('1000')).toBe('1k');
    expect(canonical('0.5')).toBe('500m');
    expect(canonical('16314660Ki')).toBe('16314660Ki');
    expect(canonical('1048576Ki')).toBe('1Gi');
    expect(canonical('512')).toBe('512');
    expect(canonical('1.5Gi')).toBe('1536Mi');
    expect(canonical('1e3')).toBe('1e3');
    expect(canonical('0')).toBe('0');
    expect(canonical('0Ki')).toBe('0');
  });

  it('rejects text that is not a quantity', () => {
    for (const bad of ['', 'abc', '1.2.3', '5Xi', 'm'])
      expect(() => parseQuantity(bad)).toThrow(/not a Kubernetes quantity/);
  });

  it('adds node resources exactly, keeping the first value’s format', () => {
    const sum = sumResourceLists([
      { cpu: '2', memory: '1Gi', pods: '110' },
      { cpu: '500m', memory: '512Mi', pods: '110' },
      undefined,
    ]);
    expect(sum).toEqual({ cpu: '2500m', memory: '1536Mi', pods: '220' });
  });

  it('skips a value that does not parse and says so', () => {
    const invalid: string[] = [];
    const sum = sumResourceLists([{ cpu: '1' }, { cpu: 'lots' }], (r, v) => invalid.push(`${r}=${v}`));
    expect(sum).toEqual({ cpu: '1' });
    expect(invalid).toEqual(['cpu=lots']);
  });
});
