// tether's V8 flags (src/node-flags.ts) start the image's processes and the benchmark's tether
// processes, and the flag itself is pinned (its measurement is in the module's header and the README).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { IMAGE_ENTRYPOINT } from '../src/image/index.ts';
import { tetherNodeFlags } from '../src/node-flags.ts';

describe("tether's V8 flags", () => {
  it("account external memory (the relays' buffers) within the heap's global limit, from a limit a busy heap has", () => {
    expect(tetherNodeFlags).toEqual([
      '--external-memory-accounted-in-global-limit',
      '--initial-heap-size=128',
    ]);
  });

  it('start the image and the benchmark hub', () => {
    for (const flag of tetherNodeFlags) {
      expect(IMAGE_ENTRYPOINT.slice(0, -1)).toContain(flag);
      const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
      expect(pkg.scripts.bench.split(' ')).toContain(flag);
    }
  });
});
