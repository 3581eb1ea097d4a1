// `tether agent --in-process-addons` refuses what it cannot honour, with an error saying why, before
// it touches any cluster; `tether join` hosts both built-in add-ons by default.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerJoinCommands } from '../../src/cli/join.ts';

const exec = promisify(execFile);

async function agent(args: string[]): Promise<string> {
  const run = exec(process.execPath, ['bin/tether.js', 'agent', '--cluster-name=c1', ...args], {
    timeout: 20_000,
  });
  const err = await run.then(
    () => undefined,
    (e: { stderr?: string }) => e,
  );
  if (!err) throw new Error('tether agent did not fail');
  return err.stderr ?? '';
}

describe('tether agent --in-process-addons', () => {
  it('an add-on the agent cannot host is refused, naming the ones it can', async () => {
    expect(await agent(['--in-process-addons=cluster-gateway'])).toContain(
      '"cluster-gateway" cannot run in the agent (it hosts cluster-proxy, managed-serviceaccount)',
    );
  });

  it('without add-on registration there would be no credential to run with: refused', async () => {
    expect(await agent(['--in-process-addons=cluster-proxy', '--no-addon-registration'])).toContain(
      '--in-process-addons needs add-on registration',
    );
  });

  it('tether join hosts cluster-proxy and managed-serviceaccount by default', () => {
    const program = new Command();
    registerJoinCommands(program);
    const join = program.commands.find((c) => c.name() === 'join');
    const option = join?.options.find((o) => o.long === '--in-process-addons' && !o.negate);
    expect(option?.defaultValue).toBe('cluster-proxy,managed-serviceaccount');
  });
});
