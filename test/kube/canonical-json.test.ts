import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/kube/canonical-json.ts';

describe('canonicalJson', () => {
  it('is the same text for objects that differ only in key order or undefined keys', () => {
    const a = { b: 1, a: { d: [1, { y: 2, x: 1 }], c: 'x' }, u: undefined };
    const b = { a: { c: 'x', d: [1, { x: 1, y: 2 }] }, b: 1 };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    expect(canonicalJson(a)).toBe('{"a":{"c":"x","d":[1,{"x":1,"y":2}]},"b":1}');
  });

  it('tells different values, array orders and null from absent apart', () => {
    expect(canonicalJson({ a: 1 })).not.toBe(canonicalJson({ a: 2 }));
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]));
    expect(canonicalJson({ a: null })).not.toBe(canonicalJson({}));
    expect(canonicalJson(undefined)).toBe('null');
  });
});
