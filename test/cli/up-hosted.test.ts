// `tether up --hosted`: which clusters join in hosted mode and where their agents run, refused with
// the reason when it names a cluster not started, a cluster hosting itself or a chain.
import { describe, expect, it } from 'vitest';
import { parseHosted } from '../../src/cli/up.ts';

describe('tether up --hosted', () => {
  it('maps each hosted cluster to its hosting one', () => {
    expect(parseHosted('cluster2=cluster1', 2)).toEqual({ cluster2: 'cluster1' });
    expect(parseHosted('cluster2=cluster1,cluster3=cluster1', 3)).toEqual({
      cluster2: 'cluster1',
      cluster3: 'cluster1',
    });
  });

  it('refuses what it cannot start, naming it', () => {
    expect(() => parseHosted('cluster3=cluster1', 2)).toThrow(
      'cluster3 is not one of the 2 clusters started',
    );
    expect(() => parseHosted('cluster1=cluster1', 2)).toThrow('cluster1 cannot host itself');
    expect(() => parseHosted('cluster2=cluster1,cluster1=cluster3', 3)).toThrow('cluster1 hosts an agent');
    expect(() => parseHosted('hub=cluster1', 2)).toThrow('--hosted wants <cluster>=<hosting cluster>');
  });
});
