// Pure parts of applying a manifest: which delete option leaves a resource to the work, which
// manifest config names a resource, spec hashes that ignore key order, AppliedManifestWork names.
import { describe, expect, it } from 'vitest';
import { appliedWorkName, hubHashOf, workNameOf } from '../../src/work/agent/applied-work.ts';
import { findManifestConfig, ownedByTheWork, specHashOf } from '../../src/work/agent/apply.ts';
import { splitApiVersion } from '../../src/work/agent/discovery.ts';

const cm = { group: '', resource: 'configmaps', namespace: 'ns', name: 'a' };

describe('ownership by delete option', () => {
  it('Foreground (and no option) owns, Orphan never does, SelectivelyOrphan follows its rules', () => {
    expect(ownedByTheWork(undefined, cm)).toBe(true);
    expect(ownedByTheWork({ propagationPolicy: 'Foreground' }, cm)).toBe(true);
    expect(ownedByTheWork({ propagationPolicy: 'Orphan' }, cm)).toBe(false);
    const selective = (rules: { group?: string; resource: string; namespace?: string; name: string }[]) => ({
      propagationPolicy: 'SelectivelyOrphan' as const,
      selectivelyOrphans: { orphaningRules: rules },
    });
    expect(ownedByTheWork(selective([{ resource: 'configmaps', namespace: 'ns', name: 'a' }]), cm)).toBe(
      false,
    );
    expect(ownedByTheWork(selective([{ resource: 'configmaps', namespace: 'other', name: 'a' }]), cm)).toBe(
      true,
    );
    expect(
      ownedByTheWork(selective([{ group: 'apps', resource: 'configmaps', namespace: 'ns', name: 'a' }]), cm),
    ).toBe(true);
    expect(ownedByTheWork({ propagationPolicy: 'SelectivelyOrphan' }, cm)).toBe(true);
  });
});

describe('manifest configs', () => {
  it('match on group, resource, namespace and name', () => {
    const meta = {
      ordinal: 0,
      group: 'apps',
      version: 'v1',
      kind: 'Deployment',
      resource: 'deployments',
      name: 'd',
      namespace: 'ns',
    };
    const configs = [
      { resourceIdentifier: { group: 'apps', resource: 'deployments', name: 'd', namespace: 'other' } },
      {
        resourceIdentifier: { group: 'apps', resource: 'deployments', name: 'd', namespace: 'ns' },
        updateStrategy: { type: 'ReadOnly' as const },
      },
    ];
    expect(findManifestConfig(meta, configs)?.updateStrategy?.type).toBe('ReadOnly');
    expect(findManifestConfig({ ...meta, name: 'x' }, configs)).toBeUndefined();
  });
});

describe('hashes and names', () => {
  it('spec hashes ignore key order and change with content', () => {
    const a = specHashOf({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'ns' } });
    const b = specHashOf({ metadata: { namespace: 'ns', name: 'a' }, kind: 'ConfigMap', apiVersion: 'v1' });
    expect(a).toBe(b);
    expect(specHashOf({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'b' } })).not.toBe(a);
  });

  it('AppliedManifestWork names are <sha256 of the hub URL>-<work>', () => {
    const hash = hubHashOf('https://127.0.0.1:6443');
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(appliedWorkName(hash, 'w')).toBe(`${hash}-w`);
    expect(workNameOf(`${hash}-w`, hash)).toBe('w');
    expect(workNameOf(`${hubHashOf('https://other')}-w`, hash)).toBeUndefined();
  });

  it('apiVersion splits into group and version', () => {
    expect(splitApiVersion('v1')).toEqual({ group: '', version: 'v1' });
    expect(splitApiVersion('apps/v1')).toEqual({ group: 'apps', version: 'v1' });
  });
});
