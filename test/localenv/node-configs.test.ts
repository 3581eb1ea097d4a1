// The real-node configs keep the fixes for this machine kind's traps (../shared/real-node.md): each
// assertion is named after what broke without it.
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  cniConflist,
  containerdConfig,
  kubeletConfig,
  type NodePaths,
} from '../../src/localenv/node-configs.ts';

const paths: NodePaths = {
  dir: '/tmp/n',
  containerdRoot: '/tmp/n/containerd/root',
  containerdState: '/tmp/n/containerd/state',
  containerdSocket: '/tmp/n/containerd/containerd.sock',
  runcRoot: '/tmp/n/containerd/runc',
  cniConfDir: '/tmp/n/cni/net.d',
  cniIpamDir: '/tmp/n/cni/ipam',
  kubeletRoot: '/tmp/n/kubelet',
  kubeletCertDir: '/tmp/n/kubelet-pki',
  podLogsDir: '/tmp/n/pod-logs',
};

describe('real node configs', () => {
  it('containerd: no negative oom_score_adj (runc "can\'t get final child\'s PID"), own pause image, own paths', () => {
    const toml = containerdConfig(paths);
    expect(toml).toContain('restrict_oom_score_adj = true');
    expect(toml).toContain('sandbox_image = "registry.k8s.io/pause:3.10"');
    expect(toml).toContain('netns_mounts_under_state_dir = true');
    expect(toml).toContain('Root = "/tmp/n/containerd/runc"');
    expect(toml).toContain('address = "/tmp/n/containerd/containerd.sock"');
    expect(toml).toContain('SystemdCgroup = false');
    // nothing outside the node directory but the CNI plugins
    const absolute = [...toml.matchAll(/"(\/[^"]*)"/g)].map((m) => m[1]);
    expect(absolute.filter((p) => !p?.startsWith('/tmp/n/'))).toEqual(['/usr/lib/cni']);
  });

  it('kubelet: runs on cgroup v1 with cgroupfs, oomScoreAdj 0, its own cgroup root, x509 only, never evicts', () => {
    const cfg = parse(
      kubeletConfig({
        paths,
        nodeAddress: '10.244.3.2',
        clientCaFile: '/tmp/cp/ca.crt',
        cgroupRoot: '/tether-c1',
        maxPods: 30,
      }),
    );
    expect(cfg).toMatchObject({
      failCgroupV1: false,
      cgroupDriver: 'cgroupfs',
      oomScoreAdj: 0,
      cgroupRoot: '/tether-c1',
      address: '10.244.3.2',
      readOnlyPort: 0,
      containerRuntimeEndpoint: 'unix:///tmp/n/containerd/containerd.sock',
      podLogsDir: '/tmp/n/pod-logs',
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: false },
        x509: { clientCAFile: '/tmp/cp/ca.crt' },
      },
      evictionHard: {},
      imageGCHighThresholdPercent: 100,
    });
  });

  it('kubelet: pods ask kube-dns at 10.0.0.10 for cluster.local, never the host resolvers', () => {
    const cfg = parse(
      kubeletConfig({
        paths,
        nodeAddress: '10.244.3.2',
        clientCaFile: '/tmp/cp/ca.crt',
        cgroupRoot: '/tether-c1',
        maxPods: 30,
      }),
    );
    expect(cfg.clusterDNS).toEqual(['10.0.0.10']);
    expect(cfg.clusterDomain).toBe('cluster.local');
    expect(cfg.resolvConf).toBe('');
  });

  it('CNI: a bridge in the node namespace on its own pod CIDR, masquerading, IPAM state in the node directory', () => {
    const conf = JSON.parse(cniConflist('tether-c1', '10.245.3.0/24', '/tmp/n/cni/ipam'));
    expect(conf.name).toBe('tether-c1');
    const bridge = conf.plugins[0];
    expect(bridge).toMatchObject({ type: 'bridge', bridge: 'cni0', isGateway: true, ipMasq: true });
    expect(bridge.ipam).toMatchObject({
      ranges: [[{ subnet: '10.245.3.0/24' }]],
      dataDir: '/tmp/n/cni/ipam',
    });
  });
});
