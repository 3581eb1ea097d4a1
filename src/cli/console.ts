// `tether console`: the fleet console (src/console/) on this machine's loopback, acting with the
// kubeconfig's own credentials. Prints the URL (which carries no token: the page gets it from the
// console itself) and runs until SIGINT/SIGTERM.
import { type Command, Option } from 'commander';
import { ConsoleServer, consoleBundle, isLoopbackAddress } from '../console/index.ts';
import { InvalidArgumentError } from '../errors.ts';
import { kubeconfigFlag } from './kubeconfig-flag.ts';
import { positiveInt } from './options.ts';
import { untilSignal } from './until-signal.ts';

interface ConsoleFlags {
  kubeconfig?: string;
  port: number;
  address: string;
}

export function registerConsoleCommand(program: Command): void {
  program
    .command('console')
    .description('serve the read-only fleet console on loopback, as the kubeconfig user (like kubectl proxy)')
    .addOption(new Option('--kubeconfig <path>', 'kubeconfig of the hub (your own user)').env('KUBECONFIG'))
    .addOption(
      new Option('--port <port>', 'port to listen on (0 = a free one)')
        .default(8009)
        .argParser(positiveInt('--port', 65535)),
    )
    .addOption(
      new Option('--address <ip>', 'loopback address to listen on (127.0.0.1, ::1 or localhost)').default(
        '127.0.0.1',
      ),
    )
    .action(async (flags: ConsoleFlags) => {
      if (!isLoopbackAddress(flags.address)) {
        throw new InvalidArgumentError(
          `--address must be a loopback address (127.0.0.1, ::1 or localhost), not "${flags.address}": ` +
            'the console has no authentication of its own and acts with your credentials',
        );
      }
      const kubeConfig = kubeconfigFlag(flags.kubeconfig, 'hub');
      const server = new ConsoleServer({ kubeConfig, address: flags.address, port: flags.port });
      await server.start();
      process.stdout.write(`tether console: ${server.url}\n`);
      // the page's size, measured where it is built (what a browser downloads on first load)
      const { js, css, buildMs } = await consoleBundle();
      process.stdout.write(
        `  app.js ${js.bytes} B (${js.gzipBytes} B gzip), app.css ${css.bytes} B (${css.gzipBytes} B gzip), built in ${buildMs} ms\n`,
      );
      await untilSignal();
      await server.stop();
    });
}
