// The configuration of one JWT issuer, in the shape of AuthenticationConfiguration's `jwt`
// entries (apiserver.config.k8s.io/v1 JWTAuthenticator), and the conversion of the legacy
// --oidc-* flags into one such entry, as kube-apiserver does since 1.30 (its
// BuiltInAuthenticationOptions.ToAuthenticationConfig): one code path for both.

export interface ClaimOrExpression {
  claim?: string;
  prefix?: string;
  expression?: string;
}

export interface JWTAuthenticatorConfig {
  issuer: {
    url: string;
    discoveryURL?: string;
    certificateAuthority?: string;
    audiences: string[];
    audienceMatchPolicy?: string;
  };
  claimValidationRules?: { claim?: string; requiredValue?: string; expression?: string; message?: string }[];
  claimMappings: {
    username: ClaimOrExpression;
    groups?: ClaimOrExpression;
    uid?: { claim?: string; expression?: string };
    extra?: { key: string; valueExpression: string }[];
  };
  userValidationRules?: { expression: string; message?: string }[];
  /** legacy --oidc-signing-algs (the configuration file accepts kube's whole list) */
  signingAlgs?: string[];
}

/** The algorithms kube accepts for ID tokens (--oidc-signing-algs). */
export const ALLOWED_SIGNING_ALGS = ['RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512'];

export interface OidcFlags {
  issuerURL: string;
  clientID: string;
  usernameClaim: string;
  /** undefined: the flag was not given */
  usernamePrefix?: string;
  groupsClaim: string;
  groupsPrefix: string;
  requiredClaims: Record<string, string>;
  signingAlgs: string[];
  caFile: string;
}

/**
 * The --oidc-* flags as one JWT issuer. The username prefix follows kube's rule: given,
 * it is used ('-' meaning none); absent, claims other than `email` are prefixed with the
 * issuer URL and '#', so an issuer cannot mint names of other users.
 */
export function jwtConfigFromFlags(f: OidcFlags, readCa: (file: string) => string): JWTAuthenticatorConfig {
  let prefix: string;
  if (f.usernamePrefix === '-') prefix = '';
  else if (f.usernamePrefix !== undefined && f.usernamePrefix !== '') prefix = f.usernamePrefix;
  else prefix = f.usernameClaim === 'email' ? '' : `${f.issuerURL}#`;
  return {
    issuer: {
      url: f.issuerURL,
      audiences: [f.clientID],
      ...(f.caFile ? { certificateAuthority: readCa(f.caFile) } : {}),
    },
    claimValidationRules: Object.entries(f.requiredClaims).map(([claim, requiredValue]) => ({ claim, requiredValue })),
    claimMappings: {
      username: { claim: f.usernameClaim, prefix },
      ...(f.groupsClaim ? { groups: { claim: f.groupsClaim, prefix: f.groupsPrefix } } : {}),
    },
    signingAlgs: f.signingAlgs,
  };
}
