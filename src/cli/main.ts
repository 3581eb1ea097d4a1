// The `tether` command: parses the command line and hands each verb to its module. Errors with a
// code (TetherError) print their message alone; anything else prints its stack. Either passes through
// the log's credential scrubber: a supervised process's stderr is a log file too.
// First import: as PID 1 (in the image) SIGTERM needs a handler before anything else loads.
import './pid1-signals.ts';
import { Command, CommanderError } from 'commander';
import { isTetherError } from '../errors.ts';
import { redactSecrets } from '../log.ts';
import { registerAgentCommand } from './agent.ts';
import { registerClusterCommands } from './clusters.ts';
import { registerGatewayCommands } from './gateway.ts';
import { registerHubCommand } from './hub.ts';
import { registerImageCommands } from './image.ts';
import { packageVersion } from './image-ref.ts';
import { registerInitCommand } from './init.ts';
import { registerJoinCommands } from './join.ts';
import { registerProxyAgentCommand } from './proxy-agent.ts';
import { registerProxyServerCommand } from './proxy-server.ts';
import { registerResourceCommands } from './resources.ts';
import { registerUpCommand } from './up.ts';

export function buildProgram(): Command {
  const program = new Command('tether')
    .description(
      'OCM-compatible multi-cluster networking: tunnel, gateway, registration, work, managed service accounts',
    )
    .version(packageVersion())
    .showHelpAfterError()
    .exitOverride();
  registerUpCommand(program);
  registerInitCommand(program);
  registerProxyServerCommand(program);
  registerProxyAgentCommand(program);
  registerJoinCommands(program);
  registerHubCommand(program);
  registerAgentCommand(program);
  registerGatewayCommands(program);
  registerImageCommands(program);
  const get = program.command('get').description('list clusters, works or service accounts');
  const create = program.command('create').description('create a work or a managed service account');
  const del = program.command('delete').description('delete a work');
  registerClusterCommands(program, get);
  registerResourceCommands(create, get, del);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    if (isTetherError(err)) {
      process.stderr.write(redactSecrets(`tether: ${err.message}\n`));
      return 1;
    }
    process.stderr.write(redactSecrets(`tether: ${(err as Error)?.stack ?? String(err)}\n`));
    return 1;
  }
}

if (process.argv[1] && /bin\/tether(\.js)?$/.test(process.argv[1])) {
  const code = await main(process.argv.slice(2));
  // Long-running verbs (up, proxy-server, …) resolve only when they are done.
  process.exitCode = code;
}
