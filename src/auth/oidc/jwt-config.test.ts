import { describe, expect, it } from 'vitest';
import { parseArgs } from '../../options.js';
import { jwtConfigFromFlags } from './jwt-config.js';

describe('the --oidc-* flags', () => {
  it('parse into one JWT issuer with kube defaults', () => {
    const o = parseArgs(['--oidc-issuer-url=https://idp.example', '--oidc-client-id=k', '--oidc-required-claim=hd=x.io', '--oidc-required-claim', 'tier=gold', '--oidc-groups-claim=groups']) as any;
    expect(o.oidcFlagsSet).toBe(true);
    expect(o.oidc).toMatchObject({ usernameClaim: 'sub', signingAlgs: ['RS256'], requiredClaims: { hd: 'x.io', tier: 'gold' } });
    const cfg = jwtConfigFromFlags(o.oidc, () => '');
    expect(cfg.issuer).toEqual({ url: 'https://idp.example', audiences: ['k'] });
    expect(cfg.claimMappings.username).toEqual({ claim: 'sub', prefix: 'https://idp.example#' });
    expect(cfg.claimMappings.groups).toEqual({ claim: 'groups', prefix: '' });
    expect(cfg.claimValidationRules).toEqual([
      { claim: 'hd', requiredValue: 'x.io' },
      { claim: 'tier', requiredValue: 'gold' },
    ]);
  });

  it("are refused with kube's messages", () => {
    expect(() => parseArgs(['--oidc-issuer-url=https://idp.example'])).toThrowError('oidc-issuer-url and oidc-client-id must be specified together when any oidc-* flags are set');
    expect(() => parseArgs(['--oidc-issuer-url=http://idp.example', '--oidc-client-id=k'])).toThrowError('URL scheme must be https');
    expect(() => parseArgs(['--oidc-issuer-url=https://idp.example', '--oidc-client-id=k', '--oidc-signing-algs=HS256'])).toThrowError(/oidc: unsupported signing alg: "HS256"/);
    expect(() => parseArgs(['--authentication-config=/etc/hosts', '--oidc-client-id=k'])).toThrowError('authentication-config file and oidc-* flags are mutually exclusive');
  });
});
