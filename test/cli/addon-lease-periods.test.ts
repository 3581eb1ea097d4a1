// The add-on lease periods are OCM's unless set: agents renew every 60 s, a lease counts for 5 of
// those after its renewTime, and the registration agent looks at every add-on each 30 s. Tests set
// them short (`tether agent --addon-lease-duration/--addon-lease-sync-interval`, passed on by
// `tether join`); these are the defaults a user gets, and the flags refuse a period that would spin.
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { addonLeaseGraceDurations, addonLeaseSyncIntervalMs } from '../../src/addon/agent/lease-health.ts';
import { defaultAddonLeaseDurationSeconds } from '../../src/addon/sdk/agent.ts';
import { registerAgentCommand } from '../../src/cli/agent.ts';
import { registerJoinCommands } from '../../src/cli/join.ts';
import { periodSeconds } from '../../src/cli/options.ts';

function optionOf(register: (p: Command) => void, verb: string, flag: string) {
  const program = new Command();
  register(program);
  const option = program.commands.find((c) => c.name() === verb)?.options.find((o) => o.long === flag);
  if (!option) throw new Error(`tether ${verb} has no ${flag}`);
  return option;
}

describe('add-on lease periods', () => {
  it("are OCM's by default: lease duration 60 s, grace 5 lease durations, sync every 30 s", () => {
    expect(defaultAddonLeaseDurationSeconds).toBe(60);
    expect(addonLeaseGraceDurations).toBe(5);
    expect(addonLeaseSyncIntervalMs).toBe(30_000);
  });

  it("tether agent's flags default to OCM's periods", () => {
    expect(optionOf(registerAgentCommand, 'agent', '--addon-lease-duration').defaultValue).toBe(60);
    expect(optionOf(registerAgentCommand, 'agent', '--addon-lease-sync-interval').defaultValue).toBe(30);
  });

  it("tether join passes them on only when given (else the agent's defaults hold)", () => {
    expect(optionOf(registerJoinCommands, 'join', '--addon-lease-duration').defaultValue).toBeUndefined();
    expect(
      optionOf(registerJoinCommands, 'join', '--addon-lease-sync-interval').defaultValue,
    ).toBeUndefined();
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
