import { describe, expect, it } from 'vitest';
import { parseAuthenticationConfiguration } from './authentication-config.js';

const head = 'apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n';

function err(text: string, disallowed: string[] = []): string {
  try {
    parseAuthenticationConfiguration(head + text, disallowed);
  } catch (e: any) {
    return e.message;
  }
  return '';
}

describe('AuthenticationConfiguration validation (kube apis/apiserver/validation)', () => {
  it('accepts a full configuration', () => {
    const c = parseAuthenticationConfiguration(
      head +
        `jwt:
- issuer: {url: https://a.example, audiences: [x, y], audienceMatchPolicy: MatchAny}
  claimValidationRules: [{claim: hd, requiredValue: example.com}, {expression: "claims.exp - claims.iat <= 3600", message: too long}]
  claimMappings:
    username: {claim: sub, prefix: "a:"}
    groups: {expression: "claims.groups"}
    extra: [{key: example.com/x, valueExpression: "claims.sub"}]
  userValidationRules: [{expression: "user.username != ''"}]
anonymous: {enabled: true, conditions: [{path: /livez}]}
`,
    );
    expect(c.jwt[0].issuer.audiences).toEqual(['x', 'y']);
    expect(c.anonymous).toEqual({ enabled: true, conditions: [{ path: '/livez' }] });
  });

  it("reports kube's field errors", () => {
    expect(err('jwt:\n- issuer: {url: http://a.example, audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: ""}}\n')).toBe('jwt[0].issuer.url: Invalid value: "http://a.example": URL scheme must be https');
    expect(err('jwt:\n- issuer: {url: https://a.example}\n  claimMappings: {username: {claim: sub, prefix: ""}}\n')).toBe('jwt[0].issuer.audiences: Required value: at least one jwt[0].issuer.audiences is required');
    expect(err('jwt:\n- issuer: {url: https://a.example, audiences: [x, y]}\n  claimMappings: {username: {claim: sub, prefix: ""}}\n')).toBe(
      'jwt[0].issuer.audienceMatchPolicy: Invalid value: "": audienceMatchPolicy must be MatchAny for multiple audiences',
    );
    expect(err('jwt:\n- issuer: {url: https://a.example, audiences: [x]}\n  claimMappings: {username: {claim: sub}}\n')).toBe(
      'jwt[0].claimMappings.username.prefix: Required value: prefix is required when claim is set. It can be set to an empty string to disable prefixing',
    );
    expect(err('jwt:\n- issuer: {url: https://a.example, audiences: [x]}\n  claimMappings: {username: {}}\n')).toBe('jwt[0].claimMappings.username: Required value: claim or expression is required');
    expect(err('jwt:\n- issuer: {url: https://a.example, audiences: [x]}\n  claimMappings: {username: {expression: "claims.email"}}\n')).toContain(
      'claims.email_verified must be used in claimMappings.username.expression',
    );
    expect(err('jwt:\n- issuer: {url: https://a.example, audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: ""}, extra: [{key: kubernetes.io/x, valueExpression: "claims.a"}]}\n')).toBe(
      'jwt[0].claimMappings.extra[0].key: Invalid value: "kubernetes.io/x": k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use',
    );
    expect(err('jwt:\n- issuer: {url: https://a.example, audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: ""}}\n', ['https://a.example'])).toBe(
      'jwt[0].issuer.url: Invalid value: "https://a.example": URL must not overlap with disallowed issuers: [https://a.example]',
    );
    expect(err('anonymous: {enabled: false, conditions: [{path: /x}]}\n')).toBe('anonymous.conditions: Invalid value: [{"path":"/x"}]: enabled should be set to true when conditions are defined');
  });

  it('compiles the CEL and refuses a bad expression', () => {
    const m = err('jwt:\n- issuer: {url: https://a.example, audiences: [x]}\n  claimMappings: {username: {expression: "claims.sub +"}}\n');
    expect(m).toMatch(/^jwt\[0\]\.claimMappings\.username\.expression: Invalid value: "claims.sub \+": compilation failed: ERROR: <input>:1:/);
  });

  it('decodes strictly', () => {
    expect(err('jwt:\n- issuer: {url: https://a.example, audiences: [x], foo: 1}\n  claimMappings: {username: {claim: sub, prefix: ""}}\nbar: 2\n')).toBe(
      'strict decoding error: unknown field "jwt[0].issuer.foo", unknown field "bar"',
    );
  });

  it('several errors aggregate as kube does', () => {
    expect(err('jwt:\n- issuer: {audiences: [x]}\n  claimMappings: {}\n')).toBe('[jwt[0].issuer.url: Required value, jwt[0].claimMappings.username: Required value: claim or expression is required]');
  });
});
