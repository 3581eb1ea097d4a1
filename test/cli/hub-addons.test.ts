// `tether hub`'s built-in addon flags: nothing without --addon-image (and a flag that needs it is
// refused, saying so), cluster-proxy only with both its address and CA, the user-server only with
// both its URL and CA, each value checked with a message naming the flag.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { builtinAddonOptions } from '../../src/cli/hub-addons.ts';

const dir = mkdtempSync(join(tmpdir(), 'tether-hub-addons-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const caFile = join(dir, 'ca.crt');
writeFileSync(caFile, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
const notPem = join(dir, 'not.pem');
writeFileSync(notPem, 'hello');

describe('tether hub built-in addon flags', () => {
  it('offers nothing without --addon-image, and refuses an addon flag without it', () => {
    expect(builtinAddonOptions({})).toBeUndefined();
    expect(() => builtinAddonOptions({ clusterProxyServer: 'hub:8091', clusterProxyCaFile: caFile })).toThrow(
      /--cluster-proxy-server, --cluster-proxy-ca-file configure the built-in addons, which run only with --addon-image/,
    );
    expect(() => builtinAddonOptions({ addonImagePullPolicy: 'Never' })).toThrow(/--addon-image-pull-policy/);
  });

  it('takes the image and pull policy; cluster-proxy only with its address and CA together', () => {
    expect(
      builtinAddonOptions({ addonImage: 'registry.example/tether:1.0', addonImagePullPolicy: 'Always' }),
    ).toEqual({
      image: 'registry.example/tether:1.0',
      imagePullPolicy: 'Always',
    });
    const withProxy = builtinAddonOptions({
      addonImage: 'localhost/tether:0.1.0',
      clusterProxyServer: '10.0.0.5:31091',
      clusterProxyCaFile: caFile,
    });
    expect(withProxy?.proxyServer).toBe('10.0.0.5:31091');
    expect(withProxy?.proxyServerCaPem).toContain('BEGIN CERTIFICATE');
    expect(() => builtinAddonOptions({ addonImage: 'tether:1', clusterProxyServer: 'hub:8091' })).toThrow(
      /--cluster-proxy-server and --cluster-proxy-ca-file go together/,
    );
    expect(() => builtinAddonOptions({ addonImage: 'tether:1', clusterProxyCaFile: caFile })).toThrow(
      /go together/,
    );
  });

  it('names the flag whose value is wrong', () => {
    expect(() => builtinAddonOptions({ addonImage: 'not an image' })).toThrow(
      /--addon-image must be an image reference/,
    );
    for (const bad of ['hub', 'hub:', 'hub:99999', 'https://hub:8091', 'hub:8091 x'])
      expect(
        () =>
          builtinAddonOptions({
            addonImage: 'tether:1',
            clusterProxyServer: bad,
            clusterProxyCaFile: caFile,
          }),
        bad,
      ).toThrow(/--cluster-proxy-server must be host:port/);
    expect(
      builtinAddonOptions({
        addonImage: 'tether:1',
        clusterProxyServer: '[fd00::1]:8091',
        clusterProxyCaFile: caFile,
      })?.proxyServer,
    ).toBe('[fd00::1]:8091');
    expect(() =>
      builtinAddonOptions({
        addonImage: 'tether:1',
        clusterProxyServer: 'hub:8091',
        clusterProxyCaFile: notPem,
      }),
    ).toThrow(/--cluster-proxy-ca-file .*expected a PEM certificate/);
    expect(() =>
      builtinAddonOptions({
        addonImage: 'tether:1',
        clusterProxyServer: 'hub:8091',
        clusterProxyCaFile: join(dir, 'missing'),
      }),
    ).toThrow(/--cluster-proxy-ca-file .*no such file/);
  });

  it('--user-server-url and --user-server-ca-file: both or neither; the URL is https://host[:port] without a path', () => {
    const caPem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    expect(
      builtinAddonOptions({
        addonImage: 'tether:1',
        userServerUrl: 'https://h:9092/',
        userServerCaFile: caFile,
      })?.userServer,
    ).toEqual({ url: 'https://h:9092', caPem });
    expect(
      builtinAddonOptions({
        addonImage: 'tether:1',
        userServerUrl: 'https://[fd00::1]:9092',
        userServerCaFile: caFile,
      })?.userServer?.url,
    ).toBe('https://[fd00::1]:9092');
    expect(builtinAddonOptions({ addonImage: 'tether:1' })?.userServer).toBeUndefined();
    expect(() => builtinAddonOptions({ addonImage: 'tether:1', userServerUrl: 'https://h:9092' })).toThrow(
      /--user-server-url and --user-server-ca-file go together/,
    );
    expect(() => builtinAddonOptions({ addonImage: 'tether:1', userServerCaFile: caFile })).toThrow(
      /--user-server-url and --user-server-ca-file go together/,
    );
    for (const bad of [
      'http://h:9092',
      'https://h:9092/cluster1',
      'https://h:9092?x=1',
      'https://h:9092#x',
      'https://u:p@h:9092',
      'h:9092',
      'not a url',
    ])
      expect(
        () => builtinAddonOptions({ addonImage: 'tether:1', userServerUrl: bad, userServerCaFile: caFile }),
        bad,
      ).toThrow(
        /--user-server-url must be https:\/\/host\[:port\] \(no path: the cluster name is appended\)/,
      );
    expect(() =>
      builtinAddonOptions({
        addonImage: 'tether:1',
        userServerUrl: 'https://h:9092',
        userServerCaFile: notPem,
      }),
    ).toThrow(/--user-server-ca-file .*expected a PEM certificate/);
    expect(() => builtinAddonOptions({ userServerUrl: 'https://h:9092', userServerCaFile: caFile })).toThrow(
      /--user-server-url, --user-server-ca-file configure the built-in addons, which run only with --addon-image/,
    );
  });
});
