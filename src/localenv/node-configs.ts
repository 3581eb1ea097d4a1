// The configuration files of one real node: containerd's config.toml, the KubeletConfiguration and
// the CNI bridge conflist. Every path points into the node's own directory; the values that work
// around this machine kind's quirks are explained where they are set (see ../shared/real-node.md).
import { stringify } from 'yaml';
import { CNI_BIN_DIR } from './node-command.ts';
import { CLUSTER_DNS_IP, CLUSTER_DOMAIN } from './node-dns.ts';

/** The sandbox image the node's containerd uses; node-images.ts builds it (no registry here). */
export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10';

export interface NodePaths {
  dir: string;
  containerdRoot: string;
  containerdState: string;
  containerdSocket: string;
  runcRoot: string;
  cniConfDir: string;
  cniIpamDir: string;
  kubeletRoot: string;
  kubeletCertDir: string;
  podLogsDir: string;
}

/** containerd 1.6 (Debian) with its own root, state, sockets and runc root. */
export function containerdConfig(p: NodePaths): string {
  const q = JSON.stringify;
  return `version = 2
root = ${q(p.containerdRoot)}
state = ${q(p.containerdState)}
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = ${q(p.containerdSocket)}
[ttrpc]
  address = ${q(`${p.containerdSocket}.ttrpc`)}
[debug]
  level = "info"
[plugins."io.containerd.internal.v1.opt"]
  path = ${q(`${p.containerdRoot}/opt`)}
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ${q(PAUSE_IMAGE)}
  # this machine kind refuses a negative oom_score_adj even for root; containerd's -998 for the
  # sandbox makes runc fail with "can't get final child's PID from pipe: EOF"
  restrict_oom_score_adj = true
  # pods' network namespaces under our state dir, not /run/netns/cni-* shared with everyone
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = ${q(p.runcRoot)}
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = ${q(CNI_BIN_DIR)}
    conf_dir = ${q(p.cniConfDir)}
`;
}

export interface KubeletConfigInput {
  paths: NodePaths;
  nodeAddress: string;
  clientCaFile: string;
  /** cgroup (in every hierarchy) the node's pods live under, e.g. /tether-cluster1 */
  cgroupRoot: string;
  maxPods: number;
}

/** The KubeletConfiguration (kubelet.config.k8s.io/v1beta1) for this machine kind. */
export function kubeletConfig(c: KubeletConfigInput): string {
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // the host is cgroup v1 (hybrid); kubelet >= 1.35 refuses v1 unless told otherwise
    failCgroupV1: false,
    // containerd 1.6 lacks the RuntimeConfig CRI call; kubelet falls back to this anyway
    cgroupDriver: 'cgroupfs',
    // pods of different nodes never share /kubepods
    cgroupRoot: c.cgroupRoot,
    // negative oom_score_adj is refused on this machine kind
    oomScoreAdj: 0,
    containerRuntimeEndpoint: `unix://${c.paths.containerdSocket}`,
    failSwapOn: false,
    address: c.nodeAddress,
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: false },
      x509: { clientCAFile: c.clientCaFile },
    },
    // only the apiserver's kubelet-client certificate (system:masters) is accepted by x509 above
    authorization: { mode: 'AlwaysAllow' },
    // pods (dnsPolicy ClusterFirst) ask the node's CoreDNS behind kube-dns (node-dns.ts)
    clusterDNS: [CLUSTER_DNS_IP],
    clusterDomain: CLUSTER_DOMAIN,
    podLogsDir: c.paths.podLogsDir,
    // not the host's resolvers: nothing outside the node namespace is reachable, so pods with
    // dnsPolicy Default (CoreDNS itself) get no nameserver
    resolvConf: '',
    // a shared machine: never evict, never garbage-collect the imported images
    evictionHard: {},
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    maxPods: c.maxPods,
    serializeImagePulls: false,
  });
}

/** The node's pod network: a bridge inside its namespace, masquerading towards the host end. */
export function cniConflist(networkName: string, podCidr: string, ipamDir: string): string {
  return `${JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: networkName,
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          ipMasq: true,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: podCidr }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: ipamDir,
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`;
}
