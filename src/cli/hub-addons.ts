// The built-in addons `tether hub` offers (src/addon/builtin: managed-serviceaccount, cluster-proxy,
// cluster-gateway): its flags checked into the options the addons need, and one AddonManager that
// runs them, each while this replica leads on the addon's Lease `<addon>-addon-manager`, with
// cluster-gateway's hub half (the ManagedServiceAccount per cluster and the addon's Available)
// under the cluster-gateway Lease. Without --addon-image nothing here starts: there is no image for
// the agents. cluster-proxy is offered only when the proxy-server's address as managed clusters
// reach it and the CA that verifies it are both given; managed-serviceaccount's token Secrets get a
// kubeconfig for the user-server (`<url>/<cluster>`) when its URL and CA are both given. The addon
// modules are loaded only then.
import type { KubeConfig } from '@kubernetes/client-node';
import type { BuiltinAddonOptions } from '../addon/builtin/index.ts';
import { InvalidArgumentError } from '../errors.ts';
import type { PullPolicy } from '../kube/workload.ts';
import type { Logger } from '../log.ts';
import { readPemFlag } from './files.ts';

export interface BuiltinAddonFlags {
  addonImage?: string;
  addonImagePullPolicy?: PullPolicy;
  clusterProxyServer?: string;
  clusterProxyCaFile?: string;
  userServerUrl?: string;
  userServerCaFile?: string;
}

/** An image reference: registry/repository[:tag][@digest], nothing a shell or YAML would split. */
const IMAGE_REF = /^[A-Za-z0-9][A-Za-z0-9._\-/:@]*$/;
/** host:port (a name, an IPv4 address or a bracketed IPv6 address) or a wss:// URL. */
const PROXY_SERVER = /^(?:(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):(\d{1,5})|wss:\/\/\S+)$/;

/** What the built-in addons get from the flags; undefined when --addon-image is not given. */
export function builtinAddonOptions(flags: BuiltinAddonFlags): BuiltinAddonOptions | undefined {
  if (!flags.addonImage) {
    const without = [
      flags.addonImagePullPolicy && '--addon-image-pull-policy',
      flags.clusterProxyServer && '--cluster-proxy-server',
      flags.clusterProxyCaFile && '--cluster-proxy-ca-file',
      flags.userServerUrl && '--user-server-url',
      flags.userServerCaFile && '--user-server-ca-file',
    ].filter(Boolean);
    if (without.length > 0)
      throw new InvalidArgumentError(
        `${without.join(', ')} configure the built-in addons, which run only with --addon-image <ref> (the tether image their agents run)`,
      );
    return undefined;
  }
  if (!IMAGE_REF.test(flags.addonImage))
    throw new InvalidArgumentError(
      `--addon-image must be an image reference such as registry.example/tether:1.0, got "${flags.addonImage}"`,
    );
  if (Boolean(flags.clusterProxyServer) !== Boolean(flags.clusterProxyCaFile))
    throw new InvalidArgumentError(
      '--cluster-proxy-server and --cluster-proxy-ca-file go together: the proxy-server address managed clusters dial and the CA that verifies it',
    );
  if (Boolean(flags.userServerUrl) !== Boolean(flags.userServerCaFile))
    throw new InvalidArgumentError(
      '--user-server-url and --user-server-ca-file go together: where ManagedServiceAccount kubeconfigs point and the CA that verifies it',
    );
  const options: BuiltinAddonOptions = {
    image: flags.addonImage,
    ...(flags.addonImagePullPolicy ? { imagePullPolicy: flags.addonImagePullPolicy } : {}),
  };
  if (flags.clusterProxyServer) {
    for (const address of flags.clusterProxyServer.split(',')) {
      const m = PROXY_SERVER.exec(address);
      const port = m?.[1] === undefined ? 1 : Number(m[1]);
      if (!m || port < 1 || port > 65535)
        throw new InvalidArgumentError(
          `--cluster-proxy-server must be host:port (or wss:// URLs, comma-separated) as managed clusters reach the proxy-server, got "${address}"`,
        );
    }
    options.proxyServer = flags.clusterProxyServer;
    options.proxyServerCaPem = readPemFlag(
      '--cluster-proxy-ca-file',
      flags.clusterProxyCaFile,
      'CERTIFICATE',
    );
  }
  if (flags.userServerUrl) {
    const u = URL.parse(flags.userServerUrl);
    const plain =
      u?.protocol === 'https:' && u.pathname === '/' && !u.search && !u.hash && !u.username && !u.password;
    if (!plain)
      throw new InvalidArgumentError(
        `--user-server-url must be https://host[:port] (no path: the cluster name is appended), got "${flags.userServerUrl}"`,
      );
    options.userServer = {
      url: flags.userServerUrl.replace(/\/+$/, ''),
      caPem: readPemFlag('--user-server-ca-file', flags.userServerCaFile, 'CERTIFICATE'),
    };
  }
  return options;
}

export interface BuiltinAddons {
  /** the addons offered, in order */
  names: string[];
  isLeader(): boolean;
  stop(): Promise<void>;
}

/**
 * Starts the AddonManager of the built-in addons (ensuring their ClusterManagementAddOns first;
 * throws when it cannot write them).
 */
export async function startBuiltinAddons(o: {
  hubKubeConfig: KubeConfig;
  options: BuiltinAddonOptions;
  /** the Leases' namespace; false: no leader election (one replica only) */
  leaderElection: { namespace: string } | false;
  log: Logger;
}): Promise<BuiltinAddons> {
  const {
    builtinAddon,
    builtinAddonNames,
    clusterGatewayAddonName,
    clusterProxyAddonName,
    startClusterGatewayAddonHub,
  } = await import('../addon/builtin/index.ts');
  const { AddonManager } = await import('../addon/sdk/manager.ts');
  const names = builtinAddonNames.filter((n) => n !== clusterProxyAddonName || o.options.proxyServer);
  if (!names.includes(clusterProxyAddonName))
    o.log.info(
      'cluster-proxy addon not offered: --cluster-proxy-server and --cluster-proxy-ca-file are not given',
    );
  const manager = new AddonManager({
    hubKubeConfig: o.hubKubeConfig,
    log: o.log,
    leaderElection: o.leaderElection === false ? false : { namespace: o.leaderElection.namespace },
    extraControllers: [
      (ctx) =>
        ctx.addon.name === clusterGatewayAddonName
          ? startClusterGatewayAddonHub({
              hubKubeConfig: ctx.hubKubeConfig,
              ...(ctx.resyncPeriodMs !== undefined ? { resyncPeriodMs: ctx.resyncPeriodMs } : {}),
              log: ctx.log.child({ controller: 'cluster-gateway-hub' }),
            })
          : { stop: async () => {} },
    ],
  });
  for (const name of names) manager.add(builtinAddon(name, o.options));
  await manager.start();
  return { names, isLeader: () => manager.isLeader(), stop: () => manager.stop() };
}
