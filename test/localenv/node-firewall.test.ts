// A managed node's firewall: only its own apiserver, squid and replies pass to the host end; the
// rules are built in the order that makes that true (accepts before the final DROP, the jump last).
import { describe, expect, it } from 'vitest';
import {
  FIREWALL_CHAIN,
  managedNodeFirewallRules,
  managedNodeIpv6Rule,
} from '../../src/localenv/node-firewall.ts';

describe('managed node firewall rules', () => {
  const rules = managedNodeFirewallRules('10.244.7.1', { apiserverPort: 41234, squidPort: 3128 });
  const chain = rules.filter((r) => r[0] === '-A' && r[1] === FIREWALL_CHAIN);

  it('accepts replies, then new TCP to the own apiserver and squid on the host end, and drops the rest', () => {
    expect(rules[0]).toEqual(['-N', FIREWALL_CHAIN]);
    expect(chain).toHaveLength(4);
    expect(chain[0]?.join(' ')).toContain('-m conntrack --ctstate ESTABLISHED,RELATED');
    expect(chain[0]?.at(-1)).toBe('ACCEPT');
    for (const [rule, port] of [
      [chain[1], 41234],
      [chain[2], 3128],
    ] as const) {
      expect(rule?.join(' ')).toContain(`-d 10.244.7.1/32 -p tcp --dport ${port}`);
      expect(rule?.at(-1)).toBe('ACCEPT');
    }
    expect(chain[3]?.at(-1)).toBe('DROP');
    expect(chain[3]?.join(' ')).not.toMatch(/--dport|-d /);
  });

  it('sends everything leaving the veth through the chain, after the chain is complete', () => {
    expect(rules.at(-1)).toEqual(['-A', 'POSTROUTING', '-o', 'eth0', '-j', FIREWALL_CHAIN]);
  });

  it('drops all IPv6 leaving the veth', () => {
    const v6 = managedNodeIpv6Rule();
    expect(v6.slice(0, 4)).toEqual(['-A', 'POSTROUTING', '-o', 'eth0']);
    expect(v6.at(-1)).toBe('DROP');
  });

  it('a hosting node also reaches the apiservers of the clusters it hosts, before the DROP, and nothing else', () => {
    const hosting = managedNodeFirewallRules('10.244.7.1', {
      apiserverPort: 41234,
      squidPort: 3128,
      hostedApiserverPorts: [42001, 42002],
    }).filter((r) => r[0] === '-A' && r[1] === FIREWALL_CHAIN);
    expect(hosting).toHaveLength(6);
    for (const [rule, port] of [
      [hosting[3], 42001],
      [hosting[4], 42002],
    ] as const) {
      expect(rule?.join(' ')).toContain(`-d 10.244.7.1/32 -p tcp --dport ${port}`);
      expect(rule?.at(-1)).toBe('ACCEPT');
    }
    expect(hosting[5]?.at(-1)).toBe('DROP');
    expect(() =>
      managedNodeFirewallRules('10.244.7.1', {
        apiserverPort: 1,
        squidPort: 2,
        hostedApiserverPorts: [70000],
      }),
    ).toThrow(/70000 is not a TCP port/);
  });

  it('refuses a port that is not a TCP port', () => {
    expect(() => managedNodeFirewallRules('10.244.7.1', { apiserverPort: 0, squidPort: 3128 })).toThrow(
      /not a TCP port/,
    );
  });
});
