// kubelet's precedence: flags over the configuration files; the flag parser's forms.
import { describe, expect, it } from 'vitest';
import { applyFlags, containerLogRotation, FlagError, parseFlags } from './cli.js';
import { withDefaults } from './config.js';

describe('kubeshard node flags', () => {
  it('parses --flag value, --flag=value and booleans; refuses unknown flags', () => {
    expect(parseFlags(['--port', '1', '--max-pods=7', '--anonymous-auth'])).toEqual({ port: '1', 'max-pods': '7', 'anonymous-auth': 'true' });
    expect(() => parseFlags(['--nope'])).toThrow(FlagError);
    expect(() => parseFlags(['--port'])).toThrow(/needs an argument/);
  });

  it('flags override the files: scalars, gates by key, taints, nested auth fields', () => {
    const cfg = withDefaults({ port: 11, featureGates: { ContainerCheckpoint: true, A: true }, authentication: { webhook: { enabled: true, cacheTTL: '1m' } } });
    const c = applyFlags(cfg, parseFlags(['--port', '12', '--feature-gates', 'ContainerCheckpoint=false,B=true', '--register-with-taints', 'k=v:NoSchedule,k2:NoExecute', '--anonymous-auth=true', '--authorization-mode', 'AlwaysAllow']));
    expect(c.port).toBe(12);
    expect(c.featureGates).toEqual({ ContainerCheckpoint: false, A: true, B: true });
    expect(c.registerWithTaints).toEqual([{ key: 'k', value: 'v', effect: 'NoSchedule' }, { key: 'k2', effect: 'NoExecute' }]);
    expect(c.authentication).toMatchObject({ webhook: { enabled: true, cacheTTL: '1m' }, anonymous: { enabled: true } });
    expect(c.authorization?.mode).toBe('AlwaysAllow');
    expect(() => applyFlags(cfg, { 'register-with-taints': 'bad' })).toThrow(/invalid taint/);
  });

  it('containerLogMaxSize and containerLogMaxFiles: kubelet defaults, flags, and the checks', () => {
    expect(containerLogRotation(withDefaults({}))).toEqual({ maxSize: 10 * 1024 * 1024, maxFiles: 5 });
    expect(containerLogRotation(applyFlags(withDefaults({ containerLogMaxFiles: 3 }), parseFlags(['--container-log-max-size', '1Ki'])))).toEqual({ maxSize: 1024, maxFiles: 3 });
    expect(() => containerLogRotation(withDefaults({ containerLogMaxFiles: 1 }))).toThrow('invalid MaxFiles 1, must be > 1');
    expect(() => containerLogRotation(withDefaults({ containerLogMaxSize: 'ten' }))).toThrow('failed to parse container log max size "ten"');
  });
});
