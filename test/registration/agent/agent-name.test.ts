// The agent name as OCM's agent picks it (five characters of apimachinery's rand alphabet), and
// which stored name a restarted agent takes over.
import { describe, expect, it } from 'vitest';
import {
  agentNameAlphabet,
  generateAgentName,
  isValidAgentName,
  storedAgentName,
} from '../../../src/registration/agent/agent-name.ts';
import type { Secret } from '../../../src/registration/agent/kinds.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const secret = (data: Record<string, string>): Secret => ({
  metadata: { name: 'hub-kubeconfig-secret' },
  data,
});

describe('agent name', () => {
  it('is generated as five characters of the rand alphabet, differently each time', () => {
    const names = new Set(Array.from({ length: 50 }, () => generateAgentName()));
    for (const name of names) {
      expect(name).toMatch(new RegExp(`^[${agentNameAlphabet}]{5}$`));
      expect(isValidAgentName(name)).toBe(true);
    }
    expect(names.size).toBeGreaterThan(40);
    expect(generateAgentName(() => 0)).toBe('bbbbb');
  });

  it('is taken from a secret for the same cluster only, and only when it can be a CN part', () => {
    expect(storedAgentName(secret({ 'cluster-name': b64('c1'), 'agent-name': b64('x7k2m') }), 'c1')).toBe(
      'x7k2m',
    );
    expect(
      storedAgentName(secret({ 'cluster-name': b64('c2'), 'agent-name': b64('x7k2m') }), 'c1'),
    ).toBeUndefined();
    expect(storedAgentName(secret({ 'cluster-name': b64('c1') }), 'c1')).toBeUndefined();
    expect(
      storedAgentName(secret({ 'cluster-name': b64('c1'), 'agent-name': b64('a:b') }), 'c1'),
    ).toBeUndefined();
    expect(storedAgentName(undefined, 'c1')).toBeUndefined();
  });
});
