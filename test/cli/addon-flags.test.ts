// `tether addon enable|disable` flags are checked before anything reaches the hub: addon names,
// labels, annotations and config references parse as clusteradm users write them, and a command
// naming no target, two targets, or per-cluster flags with --placement stops with a message that
// says what to change.
import { describe, expect, it } from 'vitest';
import {
  addonNameList,
  defaultEnableNamespace,
  disableTarget,
  enableTarget,
  parseAnnotations,
  parseConfigRef,
  parseConfigRefs,
  parseLabels,
} from '../../src/cli/addon/flags.ts';
import { hubAddonDefinitions } from '../../src/cli/addon/install.ts';

describe('addon names, labels and annotations', () => {
  it('--names splits on commas, trims, drops duplicates and refuses what is not an addon name', () => {
    expect(addonNameList(' helloworld, cluster-proxy,helloworld ')).toEqual(['helloworld', 'cluster-proxy']);
    expect(() => addonNameList(',')).toThrow('--names needs at least one addon name');
    expect(() => addonNameList('Hello_World')).toThrow('"Hello_World" is not an addon name');
  });

  it('--labels takes repeated and comma-separated pairs; a bad key or value is named', () => {
    expect(parseLabels(['env=prod,tier=web', 'example.com/team=a'])).toEqual({
      env: 'prod',
      tier: 'web',
      'example.com/team': 'a',
    });
    expect(parseLabels(['empty='])).toEqual({ empty: '' });
    expect(() => parseLabels(['novalue'])).toThrow('--labels "novalue" must be key=value');
    expect(() => parseLabels(['k=has space'])).toThrow('--labels "k=has space"');
  });

  it('--annotate splits at the first = only, so a JSON value keeps its = and commas', () => {
    const values = 'addon.open-cluster-management.io/values={"a":"x=y","b":1}';
    expect(parseAnnotations([values, 'owner=team-a'])).toEqual({
      'addon.open-cluster-management.io/values': '{"a":"x=y","b":1}',
      owner: 'team-a',
    });
    expect(() => parseAnnotations(['=v'])).toThrow('--annotate "=v" must be key=value');
  });
});

describe('--config references', () => {
  it('reads group/resource:namespace/name, the core group and cluster-scoped configs', () => {
    expect(parseConfigRef('addon.open-cluster-management.io/addondeploymentconfigs:hub-ns/proxy')).toEqual({
      group: 'addon.open-cluster-management.io',
      resource: 'addondeploymentconfigs',
      namespace: 'hub-ns',
      name: 'proxy',
    });
    expect(parseConfigRef('configmaps:ns/cm')).toEqual({
      group: '',
      resource: 'configmaps',
      namespace: 'ns',
      name: 'cm',
    });
    expect(parseConfigRef('addon.open-cluster-management.io/addonhubconfigs:default')).toEqual({
      group: 'addon.open-cluster-management.io',
      resource: 'addonhubconfigs',
      name: 'default',
    });
  });

  it('refuses malformed references with an example, and two configs of one kind', () => {
    for (const bad of ['addondeploymentconfigs', 'a/b/c:ns/n', 'g/r:ns/n/x', ':ns/n', 'g/R:ns/n']) {
      expect(() => parseConfigRef(bad), bad).toThrow(
        `--config "${bad}" must be <group>/<resource>:<namespace>/<name>`,
      );
    }
    expect(() => parseConfigRefs(['g.io/things:a/one', 'g.io/things:a/two'])).toThrow(
      '--config names g.io/things twice',
    );
  });
});

describe('enable targets', () => {
  it('--clusters with defaults: the OCM install namespace, no labels or annotations', () => {
    expect(enableTarget({ clusters: ['c1', 'c2'] })).toEqual({
      kind: 'clusters',
      clusters: ['c1', 'c2'],
      installNamespace: defaultEnableNamespace,
      labels: {},
      annotations: {},
    });
    expect(
      enableTarget({ clusters: ['c1'], namespace: 'addons', labels: ['a=b'], annotate: ['k=v'] }),
    ).toEqual({
      kind: 'clusters',
      clusters: ['c1'],
      installNamespace: 'addons',
      labels: { a: 'b' },
      annotations: { k: 'v' },
    });
  });

  it('--placement ns/name', () => {
    expect(enableTarget({ placement: 'apps/web' })).toEqual({
      kind: 'placement',
      placement: { namespace: 'apps', name: 'web' },
    });
  });

  it('stops on no target, both targets, per-cluster flags with --placement, and a bad namespace', () => {
    expect(() => enableTarget({})).toThrow('--clusters c1,c2 or --placement <ns>/<name>');
    expect(() => enableTarget({ clusters: ['c1'], placement: 'a/b' })).toThrow(
      'give either --clusters (ManagedClusterAddOns now) or --placement',
    );
    expect(() => enableTarget({ placement: 'a/b', namespace: 'x', annotate: ['k=v'] })).toThrow(
      "-n/--namespace, --annotate set fields of the ManagedClusterAddOns --clusters creates; with --placement the hub's addon manager creates them",
    );
    expect(() => enableTarget({ placement: 'no-slash' })).toThrow(
      '--placement "no-slash" must be <namespace>/<name>',
    );
    expect(() => enableTarget({ clusters: ['c1'], namespace: 'Bad_NS' })).toThrow('-n/--namespace "Bad_NS"');
  });
});

describe('disable targets', () => {
  it('takes exactly one of --clusters, --all-clusters, --placement', () => {
    expect(disableTarget({ clusters: ['c1'] })).toEqual({ kind: 'clusters', clusters: ['c1'] });
    expect(disableTarget({ allClusters: true })).toEqual({ kind: 'all-clusters' });
    expect(disableTarget({ placement: 'ns/p' })).toEqual({
      kind: 'placement',
      placement: { namespace: 'ns', name: 'p' },
    });
    expect(() => disableTarget({})).toThrow('--clusters c1,c2, --all-clusters or --placement <ns>/<name>');
    expect(() => disableTarget({ clusters: ['c1'], allClusters: true })).toThrow(
      'give one of --clusters, --all-clusters, not several',
    );
  });
});

describe('install hub-addon names', () => {
  it('knows the addons tether ships and lists them for an unknown name', () => {
    expect(hubAddonDefinitions(['managed-serviceaccount', 'cluster-proxy']).map((d) => d.name)).toEqual([
      'managed-serviceaccount',
      'cluster-proxy',
    ]);
    expect(() => hubAddonDefinitions(['argocd'])).toThrow(
      'no hub addon named argocd: tether ships managed-serviceaccount, cluster-proxy, cluster-gateway',
    );
  });
});
