// The firewall of a managed cluster's real node: inside the node's network namespace (so the rules
// die with it and nothing is added on the host), everything the node and its pods send through the
// veth to the host end is dropped except new TCP connections to the cluster's own kube-apiserver
// port and to squid's port, plus the replies of connections the host opened (the apiserver talking
// to the kubelet or to pods). The hub apiserver binds 0.0.0.0, so without this a managed pod could
// reach it on its own host end; with it the only way to the hub is a CONNECT through squid, whose
// ACLs allow the hub apiserver and the hub node's NodePorts only. IPv6 leaving the veth is dropped
// as a whole (the node speaks IPv4 only; a link-local address of the host end would otherwise reach
// every 0.0.0.0/[::] listener of the host). node-network.ts's rule (nothing but the host end) stays.
// Owns the chain TETHER-HOST-END in the namespace's mangle table and its jump; touches nothing else.
import { TetherError } from '../errors.ts';
import { runInNetns } from './node-command.ts';
import { NODE_IFACE, type NodeNetwork } from './node-network.ts';

/** The namespace's own chain: what may go to the host end. */
export const FIREWALL_CHAIN = 'TETHER-HOST-END';

export interface ManagedNodeFirewallPorts {
  /** the cluster's own kube-apiserver port (kubelet, kube-proxy, the `kubernetes` Service) */
  apiserverPort: number;
  /** squid's port on the host end: the way to the hub */
  squidPort: number;
  /**
   * the kube-apiserver ports of clusters whose agents this node hosts (hosted mode): those
   * apiservers bind every host address, so the hosted agent reaches them on this node's host end
   */
  hostedApiserverPorts?: number[];
}

/**
 * The iptables (IPv4) commands, in order, that install the firewall; each is an argument list
 * after `iptables -w -t mangle`.
 */
export function managedNodeFirewallRules(hostAddress: string, ports: ManagedNodeFirewallPorts): string[][] {
  for (const p of [ports.apiserverPort, ports.squidPort, ...(ports.hostedApiserverPorts ?? [])]) {
    if (!Number.isInteger(p) || p < 1 || p > 65535) {
      throw new TetherError('TETHER_INVALID_ARGUMENT', `node firewall: ${p} is not a TCP port`);
    }
  }
  const comment = (text: string): string[] => ['-m', 'comment', '--comment', `tether: ${text}`];
  const allowPort = (port: number, what: string): string[] => [
    '-A',
    FIREWALL_CHAIN,
    '-d',
    `${hostAddress}/32`,
    '-p',
    'tcp',
    '--dport',
    String(port),
    ...comment(what),
    '-j',
    'ACCEPT',
  ];
  return [
    ['-N', FIREWALL_CHAIN],
    [
      '-A',
      FIREWALL_CHAIN,
      '-m',
      'conntrack',
      '--ctstate',
      'ESTABLISHED,RELATED',
      ...comment('replies and connections already allowed'),
      '-j',
      'ACCEPT',
    ],
    allowPort(ports.apiserverPort, 'own kube-apiserver'),
    allowPort(ports.squidPort, 'squid, the way to the hub'),
    ...(ports.hostedApiserverPorts ?? []).map((p) => allowPort(p, "a hosted cluster's kube-apiserver")),
    ['-A', FIREWALL_CHAIN, ...comment('a managed node reaches nothing else on the host'), '-j', 'DROP'],
    ['-A', 'POSTROUTING', '-o', NODE_IFACE, '-j', FIREWALL_CHAIN],
  ];
}

/** The ip6tables command (after `ip6tables -w -t mangle`) that drops all IPv6 leaving the veth. */
export function managedNodeIpv6Rule(): string[] {
  return [
    '-A',
    'POSTROUTING',
    '-o',
    NODE_IFACE,
    '-m',
    'comment',
    '--comment',
    'tether: a managed node sends no IPv6 to the host',
    '-j',
    'DROP',
  ];
}

/**
 * Installs the firewall in a managed node's namespace. Call it before anything runs there (before
 * startNode): the rules are complete when this resolves.
 */
export async function installManagedNodeFirewall(
  network: NodeNetwork,
  ports: ManagedNodeFirewallPorts,
): Promise<void> {
  await runInNetns(network.netns, 'ip6tables', ['-w', '-t', 'mangle', ...managedNodeIpv6Rule()]);
  for (const rule of managedNodeFirewallRules(network.hostAddress, ports)) {
    await runInNetns(network.netns, 'iptables', ['-w', '-t', 'mangle', ...rule]);
  }
}
