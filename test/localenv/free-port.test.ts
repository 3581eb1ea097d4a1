import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ephemeralLow, freePort, pickRange } from '../../src/localenv/free-port.ts';

describe('freePort', () => {
  it('hands out ports below the ephemeral range, where no client socket takes them, and never twice', async () => {
    const low = ephemeralLow();
    const ports = [];
    for (let i = 0; i < 50; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    if (pickRange(low)) for (const p of ports) expect(p).toBeLessThan(Math.min(low, 30_000));
    // each can be bound right away
    for (const p of ports.slice(0, 5)) {
      const srv = createServer();
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(p, '127.0.0.1', resolve);
      });
      await new Promise((r) => srv.close(r));
    }
  });

  it('reads the kernel range and keeps out of it and of the NodePort range', () => {
    expect(ephemeralLow('32768\t60999\n')).toBe(32_768);
    expect(ephemeralLow('garbage')).toBe(32_768);
    expect(pickRange(32_768)).toEqual([10_000, 30_000]);
    expect(pickRange(20_000)).toEqual([10_000, 20_000]);
    expect(pickRange(10_500)).toBeUndefined();
  });
});
