import { describe, expect, it } from 'vitest';
import { isTetherError } from '../../src/errors.ts';
import { parseLdd } from '../../src/image/node-runtime.ts';

describe('parseLdd (the image base: node and the libraries ldd names)', () => {
  it('a library ldd cannot find fails the build, naming it', () => {
    const out = '\tlinux-vdso.so.1 (0x00007ffd)\n\tlibstdc++.so.6 => not found\n';
    let err: unknown;
    try {
      parseLdd(out);
    } catch (e) {
      err = e;
    }
    expect(isTetherError(err, 'TETHER_BINARY_NOT_FOUND')).toBe(true);
    expect((err as Error).message).toContain('libstdc++.so.6 => not found');
  });

  it('output without a dynamic loader (a static binary, or not ldd output) is refused', () => {
    expect(() => parseLdd('\tnot a dynamic executable\n')).toThrow(/no dynamic loader/);
  });

  it('the vDSO is skipped; the loader and every library are kept at the paths the binary asks for', () => {
    const libs = parseLdd(
      '\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f24)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f25)\n',
    );
    expect(libs.map((l) => l.path)).toEqual([
      '/lib/x86_64-linux-gnu/libc.so.6',
      '/lib64/ld-linux-x86-64.so.2',
    ]);
  });
});
