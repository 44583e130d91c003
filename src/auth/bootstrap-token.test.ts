import { describe, expect, it } from 'vitest';
import { BootstrapTokenAuthenticator, bootstrapSecretExpired } from './bootstrap-token.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
function secret(data: Record<string, string>, type = 'bootstrap.kubernetes.io/token'): any {
  return { metadata: { name: 'bootstrap-token-abcdef', namespace: 'kube-system' }, type, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])) };
}
const base = { 'token-id': 'abcdef', 'token-secret': '0123456789abcdef', 'usage-bootstrap-authentication': 'true' };

describe('bootstrap token authenticator (kube token/bootstrap)', () => {
  it('authenticates <id>.<secret> as system:bootstrap:<id> with the extra groups', () => {
    const a = new BootstrapTokenAuthenticator(() => secret({ ...base, 'auth-extra-groups': 'system:bootstrappers:worker,system:bootstrappers:kubeadm:default-node-token' }));
    expect(a.authenticateToken('abcdef.0123456789abcdef')).toEqual({
      ok: true,
      response: { user: { name: 'system:bootstrap:abcdef', uid: '', groups: ['system:bootstrappers', 'system:bootstrappers:worker', 'system:bootstrappers:kubeadm:default-node-token', 'system:authenticated'] } },
    });
  });

  it('passes on everything else without an error', () => {
    const cases: [string, any][] = [
      ['not-a-token', secret(base)],
      ['abcdef.0123456789abcdee', secret(base)],
      ['abcdef.0123456789abcdef', null],
      ['abcdef.0123456789abcdef', secret(base, 'Opaque')],
      ['abcdef.0123456789abcdef', secret({ ...base, expiration: '2020-01-01T00:00:00Z' })],
      ['abcdef.0123456789abcdef', secret({ ...base, 'usage-bootstrap-authentication': 'false' })],
      ['abcdef.0123456789abcdef', secret({ ...base, 'auth-extra-groups': 'admins' })],
    ];
    for (const [token, s] of cases) expect(new BootstrapTokenAuthenticator(() => s).authenticateToken(token)).toEqual({ ok: false });
  });

  it('treats an unparsable expiration as expired', () => {
    expect(bootstrapSecretExpired(secret({ ...base, expiration: 'tomorrow' }))).toBe(true);
    expect(bootstrapSecretExpired(secret({ ...base, expiration: '2999-01-01T00:00:00Z' }))).toBe(false);
    expect(bootstrapSecretExpired(secret(base))).toBe(false);
  });
});
