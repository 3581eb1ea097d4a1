// `tether <verb>` loads only what the verb uses: the tunnel verbs never load the Kubernetes client
// (about 900 modules and most of an idle process's memory) nor the registration, work or gateway
// code, while `tether --help` still lists every verb. Each run is a real `tether` child whose
// module loads are recorded by a module hook and printed when it exits.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/localenv/process.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/pki/index.ts';
import { pollUntil } from '../../src/wait.ts';

const dir = mkdtempSync(join(tmpdir(), 'tether-lazy-load-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

// The child writes its list to a file of its own when it exits: a list of 150 KB written to a
// stderr pipe at exit can be cut short.
const hooks = join(dir, 'record-loads.mjs');
writeFileSync(
  hooks,
  `import { registerHooks } from 'node:module';
import { writeFileSync } from 'node:fs';
const seen = [];
registerHooks({ load(url, ctx, next) { seen.push(url); return next(url, ctx); } });
process.on('exit', () => writeFileSync(process.env.LOADS_FILE, JSON.stringify(seen)));
`,
);

let runs = 0;
/** A fresh file for one child's module list, and the environment that names it. */
function loadsFile(env: NodeJS.ProcessEnv = process.env): { path: string; env: NodeJS.ProcessEnv } {
  const path = join(dir, `loads-${++runs}.json`);
  return { path, env: { ...env, LOADS_FILE: path } };
}

function loadedModules(path: string, output: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new Error(`the child wrote no module list; its stderr:\n${output}`);
  }
  return JSON.parse(text) as string[];
}

function tether(args: string[]): { status: number | null; stdout: string; modules: string[] } {
  const loads = loadsFile();
  const run = spawnSync(process.execPath, ['--import', hooks, 'bin/tether.js', ...args], {
    encoding: 'utf8',
    timeout: 60_000,
    env: loads.env,
  });
  return { status: run.status, stdout: run.stdout, modules: loadedModules(loads.path, run.stderr) };
}

const kubernetesClient = (m: string): boolean => m.includes('/node_modules/@kubernetes/client-node/');
const hubOrAgentCode = (m: string): boolean =>
  /\/src\/(registration|work|serviceaccount|gateway|addon)\//.test(m);

// Each test starts real processes; on a busy shared machine a Node start alone can take seconds.
describe('tether loads only what a verb uses', { timeout: 90_000 }, () => {
  it('proxy-agent and proxy-server register without the Kubernetes client or hub/agent controllers', () => {
    for (const verb of ['proxy-agent', 'proxy-server']) {
      const run = tether([verb, '--help']);
      expect(run.status, verb).toBe(0);
      expect(run.stdout).toContain(`Usage: tether ${verb}`);
      expect(run.modules.some((m) => m.endsWith(`/src/cli/${verb}.ts`))).toBe(true);
      expect(run.modules.filter(kubernetesClient), verb).toEqual([]);
      expect(run.modules.filter(hubOrAgentCode), verb).toEqual([]);
      expect(run.modules.filter((m) => /\/src\/cli\/(agent|hub|up|init|join|gateway)\.ts$/.test(m))).toEqual(
        [],
      );
    }
  });

  it('with a warm compile cache, a start never loads the TypeScript stripper (about 18 MB of RSS)', () => {
    const probe = join(dir, 'record-builtins.mjs');
    writeFileSync(
      probe,
      `import { writeFileSync } from 'node:fs';
process.on('exit', () => writeFileSync(process.env.LOADS_FILE, JSON.stringify(process.moduleLoadList)));\n`,
    );
    // The cache's default place, $TMPDIR/node-compile-cache, in a directory of this test's own
    // (NODE_COMPILE_CACHE would enable the cache from Node's start, before tether's own call).
    const tmp = join(dir, 'tmp');
    mkdirSync(tmp);
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmp };
    delete env.NODE_COMPILE_CACHE;
    delete env.NODE_DISABLE_COMPILE_CACHE;
    const builtins = (): string[] => {
      const loads = loadsFile(env);
      const run = spawnSync(process.execPath, ['--import', probe, 'bin/tether.js', 'proxy-agent', '--help'], {
        encoding: 'utf8',
        timeout: 60_000,
        env: loads.env,
      });
      expect(run.status).toBe(0);
      return loadedModules(loads.path, run.stderr);
    };
    const stripper = (m: string): boolean => m.includes('amaro');
    expect(builtins().some(stripper), 'the first start strips TypeScript').toBe(true);
    expect(builtins().filter(stripper), 'the second start reads it from the cache').toEqual([]);
  });

  it('--help still lists every verb, in order', () => {
    const run = tether(['--help']);
    expect(run.status).toBe(0);
    const commands = run.stdout.slice(run.stdout.indexOf('Commands:'));
    const verbs = [...commands.matchAll(/^ {2}([a-z-]+)\b/gm)].map((m) => m[1]);
    expect(verbs).toEqual([
      'up',
      'init',
      'proxy-server',
      'proxy-agent',
      'join',
      'unjoin',
      'hub',
      'agent',
      'serviceaccount-agent',
      'gateway',
      'kubeconfig',
      'image',
      'get',
      'create',
      'delete',
      'accept',
      'clusterset',
      'addon',
      'install',
      'console',
      'credentials',
      'help',
    ]);
  });

  it('a running proxy-server with --insecure-skip-hub-checks never loads the Kubernetes client', async () => {
    const ca = await createCertificateAuthority('lazy-load-ca');
    const serving = await issueCertificate(ca, { commonName: 'proxy-server', usage: 'server' });
    const modules = await runUntilLogged(
      [
        'proxy-server',
        '--bind-address=127.0.0.1',
        '--agent-port=0',
        '--connect-port=0',
        '--ops-port=0',
        `--tls-cert-file=${file('server.crt', serving.certPem)}`,
        `--tls-key-file=${file('server.key', serving.keyPem)}`,
        `--agent-ca-file=${file('ca.crt', ca.certPem)}`,
        '--insecure-skip-hub-checks',
      ],
      'proxy-server ready',
    );
    expect(modules.some((m) => m.endsWith('/src/proxy-server/server.ts'))).toBe(true);
    expect(modules.filter(kubernetesClient)).toEqual([]);
    expect(modules.filter((m) => /\/src\/(kube|proxy-server\/(cluster-admission|hub-auth))/.test(m))).toEqual(
      [],
    );
  });

  it('agent --no-work --no-serviceaccount without --proxy-server loads neither those agents nor the tunnel', async () => {
    // Nothing listens here: the agent starts and keeps trying to reach its cluster.
    const closed = await freePort();
    const kubeconfig = file(
      'closed.kubeconfig',
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: c, cluster: {server: "https://127.0.0.1:${closed}"}}]`,
        'contexts: [{name: c, context: {cluster: c, user: u}}]',
        'current-context: c',
        'users: [{name: u, user: {}}]',
        '',
      ].join('\n'),
    );
    const modules = await runUntilLogged(
      [
        'agent',
        '--cluster-name=cluster1',
        '--agent-name=lazy',
        `--kubeconfig=${kubeconfig}`,
        `--bootstrap-kubeconfig=${kubeconfig}`,
        '--no-work',
        '--no-serviceaccount',
        '--ops-port=0',
      ],
      'agent started',
    );
    expect(modules.some((m) => m.includes('/src/registration/agent/'))).toBe(true);
    expect(
      modules.filter((m) =>
        /\/src\/(work|serviceaccount)\/|\/src\/(proxy-agent\/agent|tunnel\/agent-session)\.ts$/.test(m),
      ),
    ).toEqual([]);
  });
});

describe('an idle daemon verb gives its young generation back', { timeout: 90_000 }, () => {
  it('proxy-server shrinks a grown V8 new space to its minimum once idle (src/cli/idle-memory.ts)', async () => {
    // Survivors across scavenges make V8 grow its new space, as a start-up loading modules does;
    // then the child reports the size every 100 ms. Nothing else would shrink it in an idle process.
    const grow = join(dir, 'grow-new-space.mjs');
    writeFileSync(
      grow,
      `import v8 from 'node:v8';
const size = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
let keep = [];
for (let i = 0; i < 5e7 && size() < 16 * 2 ** 20; i++) {
  keep.push({ i });
  if (keep.length > 300000) keep = [];
}
keep = undefined;
setInterval(() => process.stderr.write('[new-space]' + size() + '\\n'), 100).unref();
`,
    );
    const ca = await createCertificateAuthority('idle-memory-ca');
    const serving = await issueCertificate(ca, { commonName: 'proxy-server', usage: 'server' });
    const child = spawn(
      process.execPath,
      [
        '--import',
        grow,
        'bin/tether.js',
        'proxy-server',
        '--bind-address=127.0.0.1',
        '--agent-port=0',
        '--connect-port=0',
        '--ops-port=0',
        `--tls-cert-file=${file('idle.crt', serving.certPem)}`,
        `--tls-key-file=${file('idle.key', serving.keyPem)}`,
        `--agent-ca-file=${file('idle-ca.crt', ca.certPem)}`,
        '--insecure-skip-hub-checks',
      ],
      { env: { ...process.env, TETHER_LOG_LEVEL: 'info' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    children.push(child);
    const sizes: number[] = [];
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString();
      for (const m of d.toString().matchAll(/\[new-space\](\d+)/g)) sizes.push(Number(m[1]));
    });
    const MiB = 2 ** 20;
    await pollUntil(async () => sizes.some((s) => s >= 8 * MiB), {
      timeoutMs: 60_000,
      intervalMs: 50,
      description: `the child's new space to grow (stderr: ${stderr.slice(-500)})`,
    });
    const grownAt = sizes.length;
    await pollUntil(
      async () => {
        if (child.exitCode !== null) throw new Error(`proxy-server exited: ${stderr}`);
        return sizes.slice(grownAt).some((s) => s <= 2 * MiB);
      },
      { timeoutMs: 60_000, intervalMs: 100, description: 'the idle proxy-server to shrink its new space' },
    );
    child.kill('SIGTERM');
  });
});

function file(name: string, text: string): string {
  writeFileSync(join(dir, name), text, { mode: 0o600 });
  return join(dir, name);
}

/** Runs `tether <args>` until it logs `readyText`, stops it with SIGTERM and returns what it loaded. */
async function runUntilLogged(args: string[], readyText: string): Promise<string[]> {
  const loads = loadsFile({ ...process.env, TETHER_LOG_LEVEL: 'info' });
  const child = spawn(process.execPath, ['--import', hooks, 'bin/tether.js', ...args], {
    env: loads.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  await pollUntil(
    async () => {
      if (child.exitCode !== null) throw new Error(`tether ${args[0]} exited: ${stderr}`);
      return stdout.includes(readyText);
    },
    { timeoutMs: 60_000, intervalMs: 50, description: `tether ${args[0]} to log "${readyText}"` },
  );
  child.kill('SIGTERM');
  await exited;
  return loadedModules(loads.path, stderr);
}
