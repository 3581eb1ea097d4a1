// `tether serviceaccount-agent --kubeconfig-server-url / --kubeconfig-ca-file` (what the
// managed-serviceaccount add-on passes when the hub runs a user-server): checked before the agent
// reads a kubeconfig or listens, with a message naming the flag to fix.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { kubeconfigEndpointFlags } from '../../src/cli/serviceaccount-agent.ts';

const exec = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'tether-sa-agent-flags-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const caPem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const caFile = join(dir, 'ca.crt');
writeFileSync(caFile, caPem);
const notPem = join(dir, 'not.pem');
writeFileSync(notPem, 'hello');

describe('tether serviceaccount-agent kubeconfig flags', () => {
  it('takes the URL alone (CA: the managed cluster’s) or with its CA', () => {
    expect(kubeconfigEndpointFlags({})).toEqual({});
    expect(kubeconfigEndpointFlags({ kubeconfigServerUrl: 'https://user-server:9092/cluster1' })).toEqual({
      kubeconfigServerUrl: 'https://user-server:9092/cluster1',
    });
    expect(
      kubeconfigEndpointFlags({
        kubeconfigServerUrl: 'https://user-server:9092/cluster1',
        kubeconfigCaFile: caFile,
      }),
    ).toEqual({ kubeconfigServerUrl: 'https://user-server:9092/cluster1', kubeconfigCaPem: caPem });
  });

  it('refuses a URL that is not https:// or has a query or fragment, a CA that is not PEM, a CA alone', () => {
    for (const bad of [
      'http://user-server:9092/c1',
      'https://h/c1?x=1',
      'https://h/c1#x',
      'user-server:9092',
    ])
      expect(() => kubeconfigEndpointFlags({ kubeconfigServerUrl: bad }), bad).toThrow(
        `--kubeconfig-server-url must be an https:// URL without credentials, query or fragment (e.g. the user-server's https://host:port/<cluster>), got "${bad}"`,
      );
    expect(() =>
      kubeconfigEndpointFlags({ kubeconfigServerUrl: 'https://h/c1', kubeconfigCaFile: notPem }),
    ).toThrow(/--kubeconfig-ca-file .*expected a PEM certificate/);
    expect(() =>
      kubeconfigEndpointFlags({
        kubeconfigServerUrl: 'https://h/c1',
        kubeconfigCaFile: join(dir, 'missing'),
      }),
    ).toThrow(/--kubeconfig-ca-file .*no such file/);
    expect(() => kubeconfigEndpointFlags({ kubeconfigCaFile: caFile })).toThrow(
      '--kubeconfig-ca-file goes with --kubeconfig-server-url',
    );
  });

  it('the command stops on a bad URL before it reads the hub kubeconfig', async () => {
    const failed = await exec(
      process.execPath,
      [
        'bin/tether.js',
        'serviceaccount-agent',
        '--cluster-name=c1',
        `--hub-kubeconfig=${join(dir, 'no-such-kubeconfig')}`,
        '--kubeconfig-server-url=http://user-server:9092/c1',
      ],
      { timeout: 20_000 },
    ).then(
      () => undefined,
      (e: { stderr?: string }) => e,
    );
    expect(failed?.stderr).toContain('--kubeconfig-server-url must be an https:// URL');
    expect(failed?.stderr).not.toContain('no-such-kubeconfig');
  });
});
