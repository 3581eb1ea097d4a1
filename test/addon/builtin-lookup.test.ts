// The built-in addons by name (what `tether hub` and `tether install hub-addon` look up), and the
// addOnMeta and supported configs `tether install hub-addon` writes into each ClusterManagementAddOn.
import { describe, expect, it } from 'vitest';
import {
  builtinAddon,
  builtinAddonMetas,
  builtinAddonNames,
  isBuiltinAddonName,
} from '../../src/addon/builtin/index.ts';

const options = {
  image: 'localhost/tether:1.2.3',
  proxyServer: 'hub:8091',
  proxyServerCaPem: '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n',
};

describe('built-in addons', () => {
  it("are OCM's names, each resolving to the addon of that name", () => {
    expect(builtinAddonNames).toEqual(['managed-serviceaccount', 'cluster-proxy', 'cluster-gateway']);
    for (const name of builtinAddonNames) expect(builtinAddon(name, options).name).toBe(name);
    expect(isBuiltinAddonName('cluster-proxy')).toBe(true);
    expect(isBuiltinAddonName('helloworld')).toBe(false);
  });

  it('an unknown name, or cluster-proxy without a proxy-server, is refused with what to do', () => {
    expect(() => builtinAddon('helloworld', options)).toThrow(/not a built-in addon.*managed-serviceaccount/);
    expect(() => builtinAddon('cluster-proxy', { image: 'x' })).toThrow(/proxy-server address/);
    // the others need no proxy-server
    expect(builtinAddon('managed-serviceaccount', { image: 'x' }).name).toBe('managed-serviceaccount');
  });

  it('what the hub shows of each (install hub-addon) is what the addon itself says', () => {
    expect(builtinAddonMetas.map((m) => m.name)).toEqual([...builtinAddonNames]);
    for (const meta of builtinAddonMetas) {
      const addon = builtinAddon(meta.name, options);
      expect(addon.displayName).toBe(meta.displayName);
      expect(addon.description).toBe(meta.description);
      expect(addon.supportedConfigs ?? []).toEqual(meta.supportedConfigs);
    }
    expect(builtinAddonMetas.find((m) => m.name === 'cluster-proxy')?.supportedConfigs).toEqual([
      { group: 'addon.open-cluster-management.io', resource: 'addondeploymentconfigs' },
    ]);
  });
});
