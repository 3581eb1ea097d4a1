import { describe, expect, it } from 'vitest';
import { localChildEnv } from '../../src/localenv/process.ts';

describe('local environment children and forward-proxy variables', () => {
  it('a user HTTPS_PROXY does not send local control-plane traffic through that proxy', () => {
    const env = localChildEnv({ HTTPS_PROXY: 'http://proxy.corp:3128', NO_PROXY: '.corp' });
    expect(env.NO_PROXY).toBe('.corp,localhost,127.0.0.1,[::1]');
    expect(env.no_proxy).toBe(env.NO_PROXY);
    expect(env.HTTPS_PROXY).toBe('http://proxy.corp:3128');
  });
  it('leaves the environment alone without a proxy, or when NO_PROXY is *', () => {
    const plain = { PATH: '/bin' };
    expect(localChildEnv(plain)).toBe(plain);
    const all = { https_proxy: 'http://p:1', no_proxy: '*' };
    expect(localChildEnv(all)).toBe(all);
  });
});
