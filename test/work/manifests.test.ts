// Reading manifests for `tether work create -f`: YAML and JSON, several documents per file,
// lists, directories in name order, and errors that name the file and the document.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatAge } from '../../src/work/hub/index.ts';
import { loadManifests, parseManifestFile } from '../../src/work/hub/manifests.ts';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tether-manifests-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cm = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;

describe('loadManifests', () => {
  it('reads multi-document YAML, skipping empty documents', () => {
    const file = join(dir, 'multi.yaml');
    writeFileSync(file, `---\n${cm('a')}---\n${cm('b')}---\n`);
    expect(loadManifests(file).map((m) => m.metadata?.name)).toEqual(['a', 'b']);
  });

  it('walks a directory recursively in name order, YAML and JSON, ignoring other files', () => {
    const tree = join(dir, 'tree');
    mkdirSync(join(tree, 'b-sub'), { recursive: true });
    writeFileSync(join(tree, 'c.yml'), cm('c'));
    writeFileSync(
      join(tree, 'a.json'),
      JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'a' } }),
    );
    writeFileSync(join(tree, 'b-sub', 'inner.yaml'), cm('inner'));
    writeFileSync(join(tree, 'README.md'), '# not a manifest');
    expect(loadManifests(tree).map((m) => `${m.kind}/${m.metadata?.name}`)).toEqual([
      'Secret/a',
      'ConfigMap/inner',
      'ConfigMap/c',
    ]);
  });

  it('expands a v1 List', () => {
    const text = JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }],
    });
    expect(parseManifestFile('list.json', text).map((m) => m.metadata?.name)).toEqual(['x']);
  });

  it('names the file, document and line of bad YAML', () => {
    expect(() => parseManifestFile('bad.yaml', `${cm('ok')}---\nkind: [unclosed\n`)).toThrow(
      /bad\.yaml, document 2 \(line \d+\): invalid YAML/,
    );
    expect(() => parseManifestFile('x.yaml', 'kind: ConfigMap\nmetadata: {name: a}\n')).toThrow(
      'x.yaml, document 1: apiVersion is missing',
    );
    expect(() => parseManifestFile('x.yaml', '- a\n- b\n')).toThrow(
      'x.yaml, document 1: expected a Kubernetes object, got a list',
    );
    expect(() => parseManifestFile('x.yaml', 'apiVersion: v1\nkind: ConfigMap\n')).toThrow(
      'ConfigMap has no metadata.name',
    );
  });

  it('says so when the path is missing or a directory holds no manifests', () => {
    expect(() => loadManifests(join(dir, 'nope'))).toThrow(/cannot read it/);
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    expect(() => loadManifests(empty)).toThrow(/no \.yaml, \.yml or \.json files/);
  });
});

describe('formatAge', () => {
  it('prints ages like kubectl', () => {
    expect(formatAge(45_000)).toBe('45s');
    expect(formatAge(200_000)).toBe('3m20s');
    expect(formatAge(30 * 60_000)).toBe('30m');
    expect(formatAge(5 * 3600_000 + 60_000)).toBe('5h1m');
    expect(formatAge(30 * 3600_000)).toBe('30h');
    expect(formatAge(3 * 86400_000)).toBe('3d');
  });
});
