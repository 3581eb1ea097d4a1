// The `tether` command: parses the command line and hands each verb to its module, loading only the
// module(s) of the verb being run (see VERB_MODULES). Errors with a
// code (TetherError) print their message alone; anything else prints its stack. Either passes through
// the log's credential scrubber: a supervised process's stderr is a log file too.
// First import: as PID 1 (in the image) SIGTERM needs a handler before anything else loads.
import './pid1-signals.ts';
import { Command, CommanderError } from 'commander';
import { isTetherError } from '../errors.ts';
import { packageVersion } from '../install/image-ref.ts';
import { logger, redactSecrets } from '../log.ts';

// Node's compile cache is enabled by bin/tether.js, before the first TypeScript file loads.

/** The `get` / `create` / `delete` groups, shared by the modules that add subcommands to them. */
interface Groups {
  get: Command;
  create: Command;
  del: Command;
}

/**
 * Each verb module in help order, with the top-level verbs it registers. Loaded on demand: a
 * process runs one verb, and e.g. `tether proxy-agent` never needs the Kubernetes client the
 * registration and work verbs load (about 900 modules, most of an idle process's memory).
 */
const VERB_MODULES: Array<{
  verbs: string[];
  register: (program: Command, groups: Groups) => Promise<void>;
}> = [
  { verbs: ['up'], register: async (p) => (await import('./up.ts')).registerUpCommand(p) },
  { verbs: ['init'], register: async (p) => (await import('./init.ts')).registerInitCommand(p) },
  {
    verbs: ['proxy-server'],
    register: async (p) => (await import('./proxy-server.ts')).registerProxyServerCommand(p),
  },
  {
    verbs: ['proxy-agent'],
    register: async (p) => (await import('./proxy-agent.ts')).registerProxyAgentCommand(p),
  },
  { verbs: ['join', 'unjoin'], register: async (p) => (await import('./join.ts')).registerJoinCommands(p) },
  { verbs: ['hub'], register: async (p) => (await import('./hub.ts')).registerHubCommand(p) },
  { verbs: ['agent'], register: async (p) => (await import('./agent.ts')).registerAgentCommand(p) },
  {
    verbs: ['serviceaccount-agent'],
    register: async (p) => (await import('./serviceaccount-agent.ts')).registerServiceAccountAgentCommand(p),
  },
  {
    verbs: ['gateway', 'kubeconfig'],
    register: async (p) => (await import('./gateway.ts')).registerGatewayCommands(p),
  },
  { verbs: ['image'], register: async (p) => (await import('./image.ts')).registerImageCommands(p) },
  {
    verbs: ['get', 'accept'],
    register: async (p, g) => (await import('./clusters.ts')).registerClusterCommands(p, g.get),
  },
  {
    verbs: ['get', 'create', 'delete'],
    register: async (_p, g) =>
      (await import('./resources.ts')).registerResourceCommands(g.create, g.get, g.del),
  },
  {
    verbs: ['get', 'clusterset'],
    register: async (p, g) => (await import('./placement.ts')).registerPlacementCommands(p, g.get),
  },
  {
    verbs: ['get', 'addon', 'install'],
    register: async (p, g) => (await import('./addon/index.ts')).registerAddonCommands(p, g.get),
  },
  { verbs: ['console'], register: async (p) => (await import('./console.ts')).registerConsoleCommand(p) },
  {
    verbs: ['credentials'],
    register: async (p) => (await import('./credentials.ts')).registerCredentialsCommand(p),
  },
];

/**
 * The `tether` program. With `argv`, only the modules of the verb it names are loaded; without one
 * (or for help, a flag first, or an unknown verb) every verb is, so help and suggestions list all.
 */
export async function buildProgram(argv?: readonly string[]): Promise<Command> {
  const program = new Command('tether')
    .description(
      'OCM-compatible multi-cluster networking: tunnel, gateway, registration, work, managed service accounts',
    )
    .version(packageVersion())
    .showHelpAfterError()
    .exitOverride();
  const verb = argv?.[0];
  const known = verb !== undefined && VERB_MODULES.some((m) => m.verbs.includes(verb));
  const wanted = known ? VERB_MODULES.filter((m) => m.verbs.includes(verb)) : VERB_MODULES;
  // Registered in help order (the groups after `image`, as before), whatever is loaded.
  let groups: Groups | undefined;
  for (const m of wanted) {
    if (!groups && (m.verbs.includes('get') || m.verbs.includes('create'))) {
      groups = {
        get: program
          .command('get')
          .description('list clusters, works, service accounts, placements or addons'),
        create: program.command('create').description('create a work or a managed service account'),
        del: program.command('delete').description('delete a work'),
      };
    }
    await m.register(program, groups as Groups);
  }
  return program;
}

/**
 * The long-running verbs: they give their idle young-generation memory back (src/cli/idle-memory.ts).
 * TETHER_IDLE_MEMORY_TRIM=0 turns that off (e.g. to measure without it).
 */
export const DAEMON_VERBS: readonly string[] = [
  'hub',
  'agent',
  'serviceaccount-agent',
  'proxy-server',
  'proxy-agent',
  'gateway',
];

export async function main(argv: string[]): Promise<number> {
  const verb = argv[0];
  if (verb && DAEMON_VERBS.includes(verb) && process.env.TETHER_IDLE_MEMORY_TRIM !== '0') {
    const log = logger('idle-memory');
    (await import('./idle-memory.ts')).trimMemoryWhenIdle({
      onTrim: (before, after, reason) =>
        log.debug(
          { reason, newSpaceBytes: { before, after } },
          'idle: V8 garbage collected, young generation given back',
        ),
    });
  }
  try {
    await (await buildProgram(argv)).parseAsync(argv, { from: 'user' });
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
