// clusteradm's tree output: `<Kind>` root, one branch per object, dotted field paths nested, Go's
// %v for lists, and (tether's choice) every level sorted so the output is stable.
import { describe, expect, it } from 'vitest';
import { formatTree, goValue } from '../../src/placement/cli/tree.ts';

describe('formatTree', () => {
  it('nests dotted fields under each object, sorted, drawn as gotree does', () => {
    const out = formatTree('ManagedClusterSet', [
      { name: 'prod', fields: { '.Status': '1 ManagedClusters selected', '.Clusters': ['a'], '.X.Y': 2 } },
      { name: 'dev', fields: { '.Clusters': [] } },
    ]);
    expect(out).toBe(
      [
        '<ManagedClusterSet> ',
        '├── <dev> ',
        '│   └── <Clusters> []',
        '└── <prod> ',
        '    ├── <Clusters> [a]',
        '    ├── <Status> 1 ManagedClusters selected',
        '    └── <X> ',
        '        └── <Y> 2',
        '',
      ].join('\n'),
    );
  });

  it('prints only the root for no objects', () => {
    expect(formatTree('Placement', [])).toBe('<Placement> \n');
  });

  it('prints values as Go’s %v does', () => {
    expect(goValue(['a', 'b'])).toBe('[a b]');
    expect(goValue(true)).toBe('true');
    expect(goValue(3)).toBe('3');
  });
});
