// Fixtures for the container image tests: unpack an oci-archive the way a container runtime does
// (index → manifest → config, layers extracted in order, owners kept) and run the image's
// entrypoint as a container would: PID 1 of a new PID namespace, in a new mount namespace (its own
// /proc) and a new network namespace (loopback only), chrooted into the rootfs as the image's user,
// with the image's environment and nothing else. Every runner is tracked and killed by cleanup().
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';

export interface OciImageConfig {
  User?: string;
  Env?: string[];
  Entrypoint?: string[];
  Cmd?: string[];
  WorkingDir?: string;
  Labels?: Record<string, string>;
  StopSignal?: string;
}

export interface UnpackedImage {
  /** org.opencontainers.image.ref.name of the index's manifest */
  refName: string;
  config: OciImageConfig;
  /** the image config's `created` */
  created: string;
  layerDigests: string[];
  /** the layer blobs (gzipped tars), in order */
  layerFiles: string[];
  rootfs: string;
}

function blob(layoutDir: string, digest: string): string {
  return join(layoutDir, 'blobs', ...digest.split(':'));
}

/** Extracts `archive` (an oci-archive with one image) into `dir`/layout and `dir`/rootfs. */
export async function unpackOciArchive(archive: string, dir: string): Promise<UnpackedImage> {
  const layout = join(dir, 'layout');
  const rootfs = join(dir, 'rootfs');
  await mkdir(layout, { recursive: true });
  await mkdir(rootfs, { recursive: true });
  execFileSync('tar', ['-xf', archive, '-C', layout]);
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as {
    manifests: { digest: string; annotations?: Record<string, string> }[];
  };
  if (index.manifests.length !== 1) throw new Error(`expected one manifest, got ${index.manifests.length}`);
  const entry = index.manifests[0] as { digest: string; annotations?: Record<string, string> };
  const manifest = JSON.parse(readFileSync(blob(layout, entry.digest), 'utf8')) as {
    config: { digest: string };
    layers: { digest: string; mediaType: string }[];
  };
  const { config, created } = JSON.parse(readFileSync(blob(layout, manifest.config.digest), 'utf8')) as {
    config: OciImageConfig;
    created: string;
  };
  for (const layer of manifest.layers) {
    if (!layer.mediaType.endsWith('tar+gzip')) throw new Error(`unexpected layer type ${layer.mediaType}`);
    execFileSync('tar', [
      '-xzf',
      blob(layout, layer.digest),
      '-C',
      rootfs,
      '--numeric-owner',
      '--same-owner',
    ]);
  }
  // mount point for the container's own /proc (runtimes create it the same way)
  await mkdir(join(rootfs, 'proc'), { recursive: true });
  return {
    refName: entry.annotations?.['org.opencontainers.image.ref.name'] ?? '',
    config,
    created,
    layerDigests: manifest.layers.map((l) => l.digest),
    layerFiles: manifest.layers.map((l) => blob(layout, l.digest)),
    rootfs,
  };
}

export interface ContainerProcess {
  /** the launcher (setpriv exec'd into unshare); its exit code is the container's */
  launcher: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** pid (in our namespace) of the container's PID 1, once it runs the entrypoint's binary */
  pid1: () => number | undefined;
}

function which(name: string): string {
  return execFileSync('sh', ['-c', `command -v ${name}`], {
    encoding: 'utf8',
    env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' },
  }).trim();
}

/** Starts and tracks containers of one unpacked image. */
export class ContainerRunner {
  private readonly image: UnpackedImage;
  private readonly running = new Set<ContainerProcess>();
  private readonly tools = {
    setpriv: which('setpriv'),
    unshare: which('unshare'),
    ip: which('ip'),
    env: which('env'),
    chroot: which('chroot'),
  };

  constructor(image: UnpackedImage) {
    this.image = image;
  }

  /** Runs the entrypoint with `args` (instead of the image's Cmd) as PID 1. */
  start(args: string[]): ContainerProcess {
    const { config, rootfs } = this.image;
    const [uid, gid = uid] = (config.User ?? '0:0').split(':');
    const { setpriv, unshare, ip, env, chroot } = this.tools;
    // lo up in the new network namespace, then: environment = the image's only, chroot as the user.
    const script = `${ip} link set lo up && cd / && exec ${env} -i "$@"`;
    // pdeathsig: if the test worker dies, the launcher dies, and --kill-child takes the container
    const launcher = spawn(
      setpriv,
      [
        '--pdeathsig=KILL',
        unshare,
        '--pid',
        '--fork',
        '--kill-child',
        '--mount',
        `--mount-proc=${join(rootfs, 'proc')}`,
        '--net',
        '--',
        '/bin/sh',
        '-c',
        script,
        'container',
        ...(config.Env ?? []),
        chroot,
        `--userspec=${uid}:${gid}`,
        `--groups=${gid}`,
        rootfs,
        ...(config.Entrypoint ?? []),
        ...args,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } },
    );
    let out = '';
    launcher.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
    });
    launcher.stderr?.on('data', (b: Buffer) => {
      out += b.toString();
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      launcher.once('exit', (code, signal) => resolve({ code, signal }));
    });
    const entryBinary = join(rootfs, config.Entrypoint?.[0] ?? '');
    const proc: ContainerProcess = {
      launcher,
      output: () => out,
      exited,
      pid1: () => {
        if (launcher.pid === undefined) return undefined;
        try {
          const children = readFileSync(`/proc/${launcher.pid}/task/${launcher.pid}/children`, 'utf8').trim();
          const pid = Number(children.split(' ')[0]);
          if (!pid) return undefined;
          // the launcher's child execs sh, env, chroot and then the entrypoint, keeping its pid
          return readlinkSync(`/proc/${pid}/exe`) === entryBinary ? pid : undefined;
        } catch {
          return undefined;
        }
      },
    };
    this.running.add(proc);
    void exited.then(() => this.running.delete(proc));
    return proc;
  }

  /** Kills what is still running (--kill-child takes the container with its launcher). */
  async cleanup(): Promise<void> {
    await Promise.all(
      [...this.running].map(async (p) => {
        p.launcher.kill('SIGKILL');
        await p.exited;
      }),
    );
  }
}

/** A /proc/<pid>/status field, e.g. `NSpid`, `Uid`, `SigCgt`. */
export function procStatus(pid: number, field: string): string {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return line?.slice(field.length + 1).trim() ?? '';
}
