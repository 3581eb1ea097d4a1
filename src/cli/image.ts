// `tether image build`: builds the tether container image (src/image) into an oci-archive and
// prints where it is, its size and how long the build took.
import type { Command } from 'commander';
import { TetherError } from '../errors.ts';
import { buildImage } from '../image/index.ts';

const MB = 1024 * 1024;

export function registerImageCommands(program: Command): void {
  const image = program.command('image').description('the tether container image');
  image
    .command('build')
    .description(
      'build the tether OCI image (node runtime + app, non-root, no shell) with buildah, no daemon; needs root',
    )
    .option(
      '--output <path>',
      'oci-archive to write (default .tether/images/tether-<version>.tar in the project)',
    )
    .option('--tag <name>', 'image name (default localhost/tether:<package.json version>)')
    .action(async (opts: { output?: string; tag?: string }) => {
      // Ctrl-C / SIGTERM: end buildah and remove the build's storage (hundreds of MB in a temp dir).
      const abort = new AbortController();
      const onSignal = (sig: NodeJS.Signals): void =>
        abort.abort(
          new TetherError('TETHER_PROCESS_FAILED', `image build interrupted by ${sig}; nothing was written`),
        );
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      let result: Awaited<ReturnType<typeof buildImage>>;
      try {
        result = await buildImage({
          output: opts.output,
          reference: opts.tag,
          onProgress: (line) => process.stderr.write(`  ${line}\n`),
          signal: abort.signal,
        });
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
      process.stdout.write(
        [
          `Built ${result.reference} (node ${result.nodeVersion}) in ${(result.durationMs / 1000).toFixed(1)} s`,
          `  archive:  ${result.archive} (${(result.archiveBytes / MB).toFixed(1)} MiB)`,
          `  unpacked: ${(result.unpackedBytes / MB).toFixed(1)} MiB`,
          `  import on a node: ctr -n k8s.io images import ${result.archive}`,
          '',
        ].join('\n'),
      );
    });
}
