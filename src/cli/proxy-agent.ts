// `tether proxy-agent`: the managed end of the tunnel as a standalone process. Dials out to the
// proxy-server(s), directly or through a forward proxy, and serves the targets its flags allow.
// Every flag can also come from a TETHER_* environment variable. The certificate files are read
// again every --cert-check-interval seconds: a Secret-mounted addon credential (cluster-proxy's
// `cluster-proxy-hub-kubeconfig`) is rotated in place by the registration agent, and the agent then
// moves its tunnels to the new certificate without cutting streams (ProxyAgent.rotate).
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { hostname } from 'node:os';
import type { Command } from 'commander';
import { InvalidArgumentError } from '../errors.ts';
import { logger } from '../log.ts';
import { startOpsServer } from '../ops.ts';
import { ProxyAgent } from '../proxy-agent/agent.ts';
import { parseExport, parseHostPort, targetPolicy } from '../proxy-agent/targets.ts';
import { readPemFlag } from './files.ts';
import { collect, envOption, positiveInt } from './options.ts';
import { agentStreamOptions, keepaliveLimits, keepaliveOptions } from './tunnel-stream-options.ts';
import { untilSignal } from './until-signal.ts';

/** Whether the first certificate of `certPem` is the public half of `keyPem`. */
function certificateMatchesKey(certPem: string, keyPem: string): boolean {
  try {
    return new X509Certificate(certPem).checkPrivateKey(createPrivateKey(keyPem));
  } catch {
    return false;
  }
}

export function registerProxyAgentCommand(program: Command): void {
  const agentCmd = program
    .command('proxy-agent')
    .description('managed end of the tunnel: dials out to the proxy-server(s) and serves allowed targets')
    .addOption(
      envOption(
        '--cluster-name <name>',
        'managed cluster name (must match the certificate)',
        'TETHER_CLUSTER_NAME',
      ).makeOptionMandatory(),
    )
    .addOption(envOption('--agent-id <id>', 'this agent replica id', 'TETHER_AGENT_ID').default(hostname()))
    .addOption(
      envOption(
        '--proxy-server <address>',
        'proxy-server host:port or wss:// URL (repeatable)',
        'TETHER_PROXY_SERVER',
      ).argParser(collect),
    )
    .addOption(
      envOption(
        '--cert-file <path>',
        'agent client certificate (PEM)',
        'TETHER_CERT_FILE',
      ).makeOptionMandatory(),
    )
    .addOption(
      envOption('--key-file <path>', 'agent client key (PEM)', 'TETHER_KEY_FILE').makeOptionMandatory(),
    )
    .addOption(
      envOption(
        '--hub-ca-file <path>',
        'CA bundle that verifies the proxy-server',
        'TETHER_HUB_CA_FILE',
      ).makeOptionMandatory(),
    )
    .addOption(
      envOption(
        '--server-name <name>',
        'TLS server name expected on the proxy-server certificate',
        'TETHER_SERVER_NAME',
      ),
    )
    .addOption(
      envOption(
        '--kube-apiserver <host:port>',
        'this cluster kube-apiserver (target kube-apiserver:443)',
        'TETHER_KUBE_APISERVER',
      ),
    )
    .addOption(
      envOption(
        '--export <name=host:port>',
        'also allow this service, reachable from the hub as <name>.<cluster>:<port> (repeatable)',
        'TETHER_EXPORT',
      ).argParser(collect),
    )
    .addOption(
      envOption(
        '--proxy-url <url>',
        'HTTP CONNECT forward proxy (http:// or https://; user:password@ for Basic auth); default HTTPS_PROXY',
        'TETHER_PROXY_URL',
      ),
    )
    .addOption(
      envOption(
        '--proxy-ca-file <path>',
        'CA bundle for TLS to an https:// forward proxy',
        'TETHER_PROXY_CA_FILE',
      ),
    )
    .addOption(
      envOption('--ops-port <port>', '/healthz, /readyz and /metrics port (0 = random)', 'TETHER_OPS_PORT')
        .default(8093)
        .argParser(positiveInt('--ops-port', 65535)),
    )
    .addOption(
      envOption('--ops-address <ip>', 'address for the ops port', 'TETHER_OPS_ADDRESS').default('127.0.0.1'),
    )
    .addOption(
      envOption(
        '--cert-check-interval <seconds>',
        'how often the certificate files are read again for a rotated certificate (0 = never)',
        'TETHER_CERT_CHECK_INTERVAL',
      )
        .default(60)
        .argParser(positiveInt('--cert-check-interval', 86_400)),
    )
    .addOption(
      envOption(
        '--drain-timeout <seconds>',
        'on SIGTERM, how long open tunnel streams (watches, exec) may go on after the GOAWAY (0 = cut at once)',
        'TETHER_DRAIN_TIMEOUT',
      )
        .default(20)
        .argParser(positiveInt('--drain-timeout', 3600)),
    );
  agentStreamOptions(agentCmd);
  keepaliveOptions(agentCmd).action(
    async (flags: {
      halfOpenTimeout: number;
      pingInterval: number;
      pingTimeout: number;
      clusterName: string;
      agentId: string;
      proxyServer?: string[];
      certFile: string;
      keyFile: string;
      hubCaFile: string;
      serverName?: string;
      kubeApiserver?: string;
      export?: string[];
      proxyUrl?: string;
      proxyCaFile?: string;
      opsPort: number;
      opsAddress: string;
      drainTimeout: number;
      certCheckInterval: number;
    }) => {
      const servers = (flags.proxyServer ?? []).flatMap((s) => s.split(',')).filter(Boolean);
      if (servers.length === 0)
        throw new InvalidArgumentError('--proxy-server is required (host:port or wss://…)');
      const apiserver =
        flags.kubeApiserver ??
        (process.env.KUBERNETES_SERVICE_HOST
          ? `${process.env.KUBERNETES_SERVICE_HOST}:${process.env.KUBERNETES_SERVICE_PORT ?? '443'}`
          : undefined);
      if (!apiserver)
        throw new InvalidArgumentError(
          '--kube-apiserver is required outside a pod (host:port of this cluster apiserver)',
        );
      const exportsList = (flags.export ?? [])
        .flatMap((s) => s.split(','))
        .filter(Boolean)
        .map(parseExport);
      const log = logger('proxy-agent', { cluster: flags.clusterName, agent: flags.agentId });
      const readTls = () => ({
        certPem: readPemFlag('--cert-file', flags.certFile, 'CERTIFICATE'),
        keyPem: readPemFlag('--key-file', flags.keyFile, 'PRIVATE KEY'),
        hubCaPem: readPemFlag('--hub-ca-file', flags.hubCaFile, 'CERTIFICATE'),
        serverName: flags.serverName,
      });
      const agent = new ProxyAgent({
        cluster: flags.clusterName,
        agentId: flags.agentId,
        servers,
        tls: readTls(),
        resolveTarget: targetPolicy(parseHostPort(apiserver, '--kube-apiserver'), exportsList),
        proxyUrl: flags.proxyUrl,
        proxyCaPem: flags.proxyCaFile
          ? readPemFlag('--proxy-ca-file', flags.proxyCaFile, 'CERTIFICATE')
          : undefined,
        limits: { ...keepaliveLimits(flags), halfOpenTimeoutMs: flags.halfOpenTimeout },
        log,
      });
      const ops = await startOpsServer({
        host: flags.opsAddress,
        port: flags.opsPort,
        registries: [agent.registry],
        ready: () => agent.readiness(),
      });
      agent.start();
      const certCheck =
        flags.certCheckInterval > 0
          ? setInterval(() => {
              let tls: ReturnType<typeof readTls>;
              try {
                tls = readTls();
              } catch (err) {
                log.warn(
                  { err: (err as Error).message },
                  'cannot read the certificate files; keeping the current ones',
                );
                return;
              }
              // A Secret volume swaps both files at once; files written one by one are not: wait
              // until the pair matches. An unchanged pair is a no-op in rotate().
              if (!certificateMatchesKey(tls.certPem, tls.keyPem)) return;
              agent
                .rotate(tls)
                .catch((err: Error) => log.error({ err: err.message }, 'certificate rotation failed'));
            }, flags.certCheckInterval * 1000)
          : undefined;
      certCheck?.unref();
      log.info(
        { servers, opsPort: ops.port, exports: exportsList.map((e) => e.name) },
        'proxy-agent started',
      );
      await untilSignal();
      clearInterval(certCheck);
      // GOAWAY: open streams (watches, exec) go on until they end or the drain timeout
      await agent.stop({ drainMs: flags.drainTimeout * 1000 });
      await ops.close();
    },
  );
}
