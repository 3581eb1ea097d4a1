// `tether join --mode hosted` and `--agent-namespace` (a second agent, another hub), checked with
// --dry-run (the manifests join would apply) and by what it refuses before touching any cluster.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

const exec = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'tether-join-modes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const caPem = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
const caFile = join(dir, 'ca.crt');
writeFileSync(caFile, caPem);
const caData = Buffer.from(caPem).toString('base64');
const managedKubeconfig = (user: string) => {
  const path = join(dir, `managed-${Math.random().toString(36).slice(2)}.kubeconfig`);
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters: [{name: m, cluster: {server: "https://10.1.2.3:6443", certificate-authority-data: ${caData}}}]
users: [{name: u, user: ${user}}]
contexts: [{name: m, context: {cluster: m, user: u}}]
current-context: m
`,
  );
  return path;
};

const base = [
  '--hub-token',
  't',
  '--hub-apiserver',
  'https://hub:6443',
  '--ca-file',
  caFile,
  '--cluster-name',
  'c2',
];

async function join_(args: string[]): Promise<{ ok: boolean; stdout: string; stderr: string }> {
  return exec(process.execPath, ['bin/tether.js', 'join', ...base, ...args], { timeout: 20_000 }).then(
    (r) => ({ ok: true, stdout: r.stdout, stderr: r.stderr }),
    (e: { stdout?: string; stderr?: string }) => ({
      ok: false,
      stdout: e.stdout ?? '',
      stderr: e.stderr ?? '',
    }),
  );
}

type Obj = { kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> } };
const objects = (yaml: string): Obj[] =>
  parseAllDocuments(yaml)
    .map((d) => d.toJSON() as Obj)
    .filter(Boolean);

describe('tether join --mode hosted', () => {
  it('prints only hosting-cluster objects, all in klusterlet-<cluster>, with the managed kubeconfig embedded', async () => {
    const r = await join_([
      '--mode',
      'hosted',
      '--managed-cluster-kubeconfig',
      managedKubeconfig('{token: abc}'),
      '--dry-run',
    ]);
    expect(r.ok, r.stderr).toBe(true);
    const objs = objects(r.stdout);
    expect(objs.some((o) => o.kind === 'CustomResourceDefinition' || o.kind.startsWith('Cluster'))).toBe(
      false,
    );
    for (const o of objs.filter((x) => x.kind !== 'Namespace'))
      expect(o.metadata.namespace).toBe('klusterlet-c2');
    const ns = objs.find((o) => o.kind === 'Namespace');
    expect(ns?.metadata).toMatchObject({
      name: 'klusterlet-c2',
      labels: { 'agent.tether.dev/agent-namespace': 'true' },
    });
    expect(r.stdout).toContain('external-managed-kubeconfig');
    expect(r.stdout).toContain('https://10.1.2.3:6443');
  });

  it('refuses a managed kubeconfig that cannot work in a pod, and the flags without each other', async () => {
    const exec_ = await join_([
      '--mode',
      'hosted',
      '--managed-cluster-kubeconfig',
      managedKubeconfig('{exec: {command: gcloud, apiVersion: client.authentication.k8s.io/v1}}'),
      '--dry-run',
    ]);
    expect(exec_.ok).toBe(false);
    expect(exec_.stderr).toContain('exec plugin');
    expect((await join_(['--mode', 'hosted', '--dry-run'])).stderr).toContain(
      '--mode hosted needs --managed-cluster-kubeconfig',
    );
    const kc = managedKubeconfig('{token: abc}');
    expect((await join_(['--managed-cluster-kubeconfig', kc, '--dry-run'])).stderr).toContain(
      '--managed-cluster-kubeconfig goes with --mode hosted',
    );
    expect((await join_(['--mode', 'sideways', '--dry-run'])).stderr).toContain(
      'Allowed choices are default, hosted',
    );
  });
});

describe('tether join --agent-namespace (a second agent, for another hub)', () => {
  it('refuses to share the add-on namespace with the first agent', async () => {
    const r = await join_(['--agent-namespace', 'second', '--dry-run']);
    expect(r.ok).toBe(false);
    expect(r.stderr).toContain('add --no-serviceaccount and --no-in-process-addons');
  });

  it('installs into its own labelled namespace with a binding of its own', async () => {
    const r = await join_([
      '--agent-namespace',
      'second',
      '--no-serviceaccount',
      '--no-in-process-addons',
      '--dry-run',
    ]);
    expect(r.ok, r.stderr).toBe(true);
    const objs = objects(r.stdout);
    expect(
      objs.find((o) => o.kind === 'Namespace' && o.metadata.name === 'second')?.metadata.labels,
    ).toMatchObject({
      'agent.tether.dev/agent-namespace': 'true',
    });
    expect(objs.filter((o) => o.kind === 'ClusterRoleBinding').map((o) => o.metadata.name)).toEqual([
      'open-cluster-management:klusterlet-agent:second',
    ]);
    expect(objs.find((o) => o.kind === 'Deployment')?.metadata.namespace).toBe('second');
  });
});
