// The container images a real node needs without a registry: the pod sandbox (hack/pause, tagged
// registry.k8s.io/pause:3.10 so containerd and the kubelet use it as is), cluster DNS (hack/coredns,
// CoreDNS built from the Go module proxy, localhost/tether-coredns:<hash>) and a tiny test server
// (hack/echoserver, localhost/tether-echoserver:<hash>). Each is a static Go program packed with
// umoci into an OCI archive (no daemon), cached under ~/.cache/tether/node-images/ by a hash of its
// sources, and imported into a node's containerd with `ctr images import`.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TetherError } from '../errors.ts';
import { type BuildProgress, goCommand, tetherCacheBase } from './binaries.ts';
import { withBuildLock } from './build-lock.ts';
import { run } from './node-command.ts';
import { PAUSE_IMAGE } from './node-configs.ts';

const hackDir = fileURLToPath(new URL('../../hack/', import.meta.url));

export interface NodeImage {
  /** full reference containerd knows it by after import, e.g. registry.k8s.io/pause:3.10 */
  ref: string;
  /** OCI archive (tar of an OCI image layout) */
  archive: string;
}

export interface NodeImages {
  pause: NodeImage;
  coredns: NodeImage;
  echoserver: NodeImage;
}

interface ImageSpec {
  /** directory under hack/ with a main package */
  program: string;
  /** reference; `{hash}` is replaced by the source hash */
  ref: string;
  user: string;
  /** deadline for `go build` (ms); default 5 min */
  buildTimeoutMs?: number;
}

const SPECS: Record<keyof NodeImages, ImageSpec> = {
  pause: { program: 'pause', ref: PAUSE_IMAGE, user: '65535:65535' },
  // ~400 packages (client-go among them): about 2 minutes on 2 cores with an empty Go build cache
  coredns: {
    program: 'coredns',
    ref: 'localhost/tether-coredns:{hash}',
    user: '65534:65534',
    buildTimeoutMs: 900_000,
  },
  echoserver: { program: 'echoserver', ref: 'localhost/tether-echoserver:{hash}', user: '65534:65534' },
};

function sourceHash(programDir: string): string {
  const h = createHash('sha256');
  for (const f of readdirSync(programDir).sort()) {
    h.update(f);
    h.update(readFileSync(join(programDir, f)));
  }
  return h.digest('hex').slice(0, 12);
}

/** Builds (once per source change) and returns the OCI archives of the node images. */
export async function ensureNodeImages(progress: BuildProgress = () => {}): Promise<NodeImages> {
  const out = {} as NodeImages;
  for (const [key, spec] of Object.entries(SPECS) as Array<[keyof NodeImages, ImageSpec]>) {
    out[key] = await ensureImage(spec, progress);
  }
  return out;
}

async function ensureImage(spec: ImageSpec, progress: BuildProgress): Promise<NodeImage> {
  const programDir = join(hackDir, spec.program);
  const hash = sourceHash(programDir);
  const ref = spec.ref.replace('{hash}', hash);
  const dir = join(tetherCacheBase(), 'node-images');
  const archive = join(dir, `${spec.program}-${hash}.tar`);
  if (existsSync(archive)) return { ref, archive };
  mkdirSync(dir, { recursive: true });
  // two processes starting nodes on a fresh machine build each image once, not twice side by side
  // (CoreDNS alone takes minutes on 2 cores)
  return withBuildLock(
    join(dir, `.build-${spec.program}.lock`),
    { what: `hack/${spec.program}`, waitMs: BUILD_LOCK_WAIT_MS, progress },
    async () => {
      if (existsSync(archive)) return { ref, archive };
      const started = Date.now();
      progress(`building image ${ref} from hack/${spec.program}…`);
      const work = join(dir, `.build-${spec.program}-${process.pid}`);
      rmSync(work, { recursive: true, force: true });
      mkdirSync(work, { recursive: true });
      try {
        const bin = join(work, spec.program);
        await run(goCommand(), ['build', '-mod=readonly', '-trimpath', '-ldflags', '-s -w', '-o', bin, '.'], {
          cwd: programDir,
          env: { ...process.env, CGO_ENABLED: '0' },
          timeoutMs: spec.buildTimeoutMs ?? 300_000,
        }).catch((err: Error) => {
          throw new TetherError(
            'TETHER_BINARY_BUILD_FAILED',
            `building hack/${spec.program}: ${err.message}`,
          );
        });
        await packWithUmoci(work, bin, spec, ref);
        const tmpTar = `${archive}.${process.pid}`;
        await run('tar', ['-C', join(work, 'layout'), '-cf', tmpTar, '.']);
        renameSync(tmpTar, archive);
        progress(`built image ${ref} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
        return { ref, archive };
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
  );
}

/** How long a process waits for another one's image build before giving up. */
const BUILD_LOCK_WAIT_MS = 20 * 60_000;

async function packWithUmoci(work: string, bin: string, spec: ImageSpec, ref: string): Promise<void> {
  const layout = join(work, 'layout');
  const bundle = join(work, 'bundle');
  const tag = 'latest';
  await run('umoci', ['init', '--layout', layout]);
  await run('umoci', ['new', '--image', `${layout}:${tag}`]);
  await run('umoci', ['unpack', '--image', `${layout}:${tag}`, bundle]);
  await run('cp', [bin, join(bundle, 'rootfs', spec.program)]);
  await run('umoci', ['repack', '--image', `${layout}:${tag}`, bundle]);
  await run('umoci', [
    'config',
    '--image',
    `${layout}:${tag}`,
    `--config.entrypoint=/${spec.program}`,
    `--config.user=${spec.user}`,
  ]);
  await run('umoci', ['gc', '--layout', layout]);
  // containerd names an imported image by this annotation (a full reference); without it the
  // image would be called by its tag alone
  const indexPath = join(layout, 'index.json');
  const index = JSON.parse(readFileSync(indexPath, 'utf8')) as {
    manifests: Array<{ annotations?: Record<string, string> }>;
  };
  for (const m of index.manifests) {
    m.annotations = {
      ...m.annotations,
      'io.containerd.image.name': ref,
      'org.opencontainers.image.ref.name': ref,
    };
  }
  writeFileSync(indexPath, JSON.stringify(index));
}
