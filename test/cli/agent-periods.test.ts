// The managed-side periods tests set short, at the defaults a user gets: add-on agents renew their
// lease every 60 s, a lease counts for 5 of those after its renewTime, and the registration agent
// looks at every add-on each 30 s (OCM's); the work agent refreshes each ManifestWork's status every
// 30 s. `tether agent --addon-lease-duration / --addon-lease-sync-interval / --status-sync-interval`
// set them (`tether join` passes them on), and refuse a period that would spin.
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { defaultAddonLeaseDurationSeconds } from '../../src/addon/sdk/agent.ts';
import { registerAgentCommand } from '../../src/cli/agent.ts';
import { registerJoinCommands } from '../../src/cli/join.ts';
import { periodSeconds } from '../../src/cli/options.ts';
import {
  addonLeaseGraceDurations,
  addonLeaseSyncIntervalMs,
} from '../../src/registration/agent/addon/lease-health.ts';
import { defaultStatusSyncIntervalMs } from '../../src/work/agent/index.ts';

function optionOf(register: (p: Command) => void, verb: string, flag: string) {
  const program = new Command();
  register(program);
  const option = program.commands.find((c) => c.name() === verb)?.options.find((o) => o.long === flag);
  if (!option) throw new Error(`tether ${verb} has no ${flag}`);
  return option;
}

describe('agent periods', () => {
  it("add-on leases are OCM's by default: lease duration 60 s, grace 5 lease durations, sync every 30 s", () => {
    expect(defaultAddonLeaseDurationSeconds).toBe(60);
    expect(addonLeaseGraceDurations).toBe(5);
    expect(addonLeaseSyncIntervalMs).toBe(30_000);
  });

  it('the work agent refreshes every ManifestWork status each 30 s by default', () => {
    expect(defaultStatusSyncIntervalMs).toBe(30_000);
  });

  it("tether agent's flags default to those periods", () => {
    expect(optionOf(registerAgentCommand, 'agent', '--addon-lease-duration').defaultValue).toBe(60);
    expect(optionOf(registerAgentCommand, 'agent', '--addon-lease-sync-interval').defaultValue).toBe(30);
    expect(optionOf(registerAgentCommand, 'agent', '--status-sync-interval').defaultValue).toBe(
      defaultStatusSyncIntervalMs / 1000,
    );
  });

  it("tether join passes them on only when given (else the agent's defaults hold)", () => {
    for (const flag of ['--addon-lease-duration', '--addon-lease-sync-interval', '--status-sync-interval'])
      expect(optionOf(registerJoinCommands, 'join', flag).defaultValue, flag).toBeUndefined();
  });

  it('a period must be whole seconds between 1 and the maximum, and the message names the flag', () => {
    const parse = periodSeconds('--addon-lease-duration', 3600);
    expect(parse('5')).toBe(5);
    for (const bad of ['0', '-1', '1.5', 'x', '3601', ''])
      expect(() => parse(bad), bad).toThrow(
        /--addon-lease-duration must be a whole number of seconds between 1 and 3600/,
      );
  });
});
