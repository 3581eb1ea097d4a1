import { describe, expect, it } from 'vitest';
import {
  configSpecHash,
  IgnoreFieldError,
  onSpokePresent,
  removeByJsonPath,
  removeByJsonPointer,
  withoutFields,
} from '../../src/work/agent/ignore-fields.ts';

const deployment = () => ({
  metadata: { annotations: { 'a/b': 'x', keep: 'y' } },
  spec: { replicas: 3, template: { spec: { containers: [{ name: 'c', image: 'i' }, { name: 'd' }] } } },
});

describe('ignore fields', () => {
  it('RFC 6901 pointers remove fields, array items and ~-escaped keys; a missing target is fine', () => {
    const obj = deployment();
    removeByJsonPointer(obj, '/spec/replicas');
    removeByJsonPointer(obj, '/metadata/annotations/a~1b');
    removeByJsonPointer(obj, '/spec/template/spec/containers/1');
    removeByJsonPointer(obj, '/spec/nothing/here');
    expect(obj).toEqual({
      metadata: { annotations: { keep: 'y' } },
      spec: { template: { spec: { containers: [{ name: 'c', image: 'i' }] } } },
    });
    expect(() => removeByJsonPointer(obj, 'spec/replicas')).toThrow(IgnoreFieldError);
  });

  it('JSONPaths remove the last field of every match, bracketed names included', () => {
    const obj = deployment();
    removeByJsonPath(obj, '.spec.template.spec.containers[*].image');
    removeByJsonPath(obj, ".metadata.annotations['a/b']");
    expect(obj.spec.template.spec.containers).toEqual([{ name: 'c' }, { name: 'd' }]);
    expect(obj.metadata.annotations).toEqual({ keep: 'y' });
    expect(() => removeByJsonPath(obj, '.spec.template.spec.containers[0]')).toThrow(/field name/);
  });

  it('only OnSpokePresent fields leave the applied object; the hash ignores key order', async () => {
    const fields = [
      { condition: 'OnSpokePresent' as const, jsonPointers: ['/spec/replicas'] },
      { condition: 'OnSpokeChange' as const, jsonPaths: ['.metadata.annotations.keep'] },
    ];
    const stripped = await withoutFields(deployment(), onSpokePresent(fields));
    expect(stripped.spec.replicas).toBeUndefined();
    expect(stripped.metadata.annotations.keep).toBe('y');
    expect(configSpecHash({ a: 1, b: [1, { c: 2, d: 3 }] })).toBe(
      configSpecHash({ b: [1, { d: 3, c: 2 }], a: 1 }),
    );
  });

  it('jq path expressions remove what they select; bad and endless expressions fail within the timeout', async () => {
    const stripped = await withoutFields(deployment(), [
      {
        condition: 'OnSpokePresent',
        jqPathExpressions: [
          '.spec.template.spec.containers[] | select(.name == "c") | .image',
          '.spec.replicas',
        ],
      },
    ]);
    expect(stripped.spec).toEqual({ template: { spec: { containers: [{ name: 'c' }, { name: 'd' }] } } });
    await expect(
      withoutFields(deployment(), [{ condition: 'OnSpokePresent', jqPathExpressions: ['.spec['] }]),
    ).rejects.toThrow(IgnoreFieldError);
    await expect(
      withoutFields(deployment(), [{ condition: 'OnSpokePresent', jqPathExpressions: ['def f: f; f'] }]),
    ).rejects.toThrow(/longer than 1000 ms/);
    // The worker is replaced after a timeout.
    const again = await withoutFields(deployment(), [
      { condition: 'OnSpokePresent', jqPathExpressions: ['.metadata'] },
    ]);
    expect(again).not.toHaveProperty('metadata');
  });
});
