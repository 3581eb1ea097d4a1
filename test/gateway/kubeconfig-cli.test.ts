// `tether kubeconfig`: the kubeconfig on stdout (so `> c.kubeconfig` stays clean), and on stderr how
// a hub user gets rights on the managed cluster, under the name the gateway gives them there.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const dir = mkdtempSync(join(tmpdir(), 'tether-kubeconfig-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const hubKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: hub
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: ${Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n').toString('base64')}
users:
- name: alice
  user:
    token: not-a-real-token
contexts:
- name: hub
  context: { cluster: hub, user: alice }
current-context: hub
`;

describe('tether kubeconfig', () => {
  it('prints the gateway kubeconfig on stdout and how to grant cluster:hub:<user> rights on stderr', () => {
    const path = join(dir, 'hub.kubeconfig');
    writeFileSync(path, hubKubeconfig);
    const run = spawnSync(
      process.execPath,
      ['bin/tether.js', 'kubeconfig', '--cluster', 'cluster2', '--kubeconfig', path],
      { encoding: 'utf8', timeout: 30_000 },
    );
    expect(run.status).toBe(0);
    const kc = parse(run.stdout) as { clusters: Array<{ cluster: { server: string } }> };
    expect(kc.clusters[0]?.cluster.server).toBe(
      'https://127.0.0.1:6443/apis/cluster.core.oam.dev/v1alpha1/clustergateways/cluster2/proxy',
    );
    expect(run.stdout).not.toContain('cluster:hub:');
    expect(run.stderr).toContain('as user "cluster:hub:<hub user>"');
    expect(run.stderr).toContain('--user=cluster:hub:alice');
    expect(run.stderr).toContain('--clusters cluster2');
  });
});
