// --authentication-config: kube's AuthenticationConfiguration (apiserver.config.k8s.io/v1,
// as 1.33 serves it): JWT issuers and the anonymous authenticator. Decoding and validation
// follow kube's apis/apiserver/validation (ValidateAuthenticationConfiguration), with its
// field-path messages; CEL compiles here, so a bad expression refuses the file.
import { parse as parseYaml } from 'yaml';
import { X509Certificate } from 'node:crypto';
import type { JWTAuthenticatorConfig } from './jwt-config.js';
import { compileClaimsExpression, CLAIMS_VARS, USER_VARS } from './claims-cel.js';

export interface AnonymousConfig {
  enabled: boolean;
  conditions?: { path: string }[];
}

export interface AuthenticationConfiguration {
  jwt: JWTAuthenticatorConfig[];
  anonymous?: AnonymousConfig;
}

const API_VERSIONS = ['apiserver.config.k8s.io/v1', 'apiserver.config.k8s.io/v1beta1', 'apiserver.config.k8s.io/v1alpha1'];

/** apimachinery's field.Error strings. */
const fe = {
  required: (p: string, detail = '') => `${p}: Required value${detail ? `: ${detail}` : ''}`,
  invalid: (p: string, v: unknown, detail: string) => `${p}: Invalid value: ${goValue(v)}: ${detail}`,
  duplicate: (p: string, v: unknown) => `${p}: Duplicate value: ${goValue(v)}`,
  forbidden: (p: string, detail: string) => `${p}: Forbidden: ${detail}`,
  tooMany: (p: string, n: number, max: number) => `${p}: Too many: ${n}: must have at most ${max} items`,
};

function goValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** kube's ErrorList.ToAggregate().Error(). */
export function aggregate(errs: string[]): string {
  return errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`;
}

export class AuthenticationConfigError extends Error {}

/** Decodes (YAML or JSON) and validates a file's content; throws AuthenticationConfigError. */
export function parseAuthenticationConfiguration(text: string, disallowedIssuers: string[] = []): AuthenticationConfiguration {
  let doc: any;
  try {
    doc = parseYaml(text);
  } catch (e: any) {
    throw new AuthenticationConfigError(`error decoding authentication configuration: ${e.message}`);
  }
  if (!doc || typeof doc !== 'object') throw new AuthenticationConfigError('error decoding authentication configuration: Object \'Kind\' is missing');
  if (doc.kind !== 'AuthenticationConfiguration' || !API_VERSIONS.includes(doc.apiVersion)) {
    throw new AuthenticationConfigError(`no kind "${doc.kind ?? ''}" is registered for version "${doc.apiVersion ?? ''}" in scheme "pkg/runtime/scheme.go:100"`);
  }
  const unknown = unknownFields(doc);
  if (unknown.length) throw new AuthenticationConfigError(`strict decoding error: ${unknown.map((f) => `unknown field ${JSON.stringify(f)}`).join(', ')}`);
  const errs: string[] = [];
  const jwts: any[] = Array.isArray(doc.jwt) ? doc.jwt : [];
  if (jwts.length > 64) throw new AuthenticationConfigError(fe.tooMany('jwt', jwts.length, 64));
  const seenIssuers = new Set<string>();
  const seenDiscovery = new Set<string>();
  const out: JWTAuthenticatorConfig[] = [];
  jwts.forEach((j, i) => {
    const p = `jwt[${i}]`;
    const cfg = validateJwt(j ?? {}, p, new Set(disallowedIssuers), errs);
    out.push(cfg);
    if (seenIssuers.has(cfg.issuer.url)) errs.push(fe.duplicate(`${p}.issuer.url`, cfg.issuer.url));
    seenIssuers.add(cfg.issuer.url);
    if (cfg.issuer.discoveryURL) {
      if (seenDiscovery.has(cfg.issuer.discoveryURL)) errs.push(fe.duplicate(`${p}.issuer.discoveryURL`, cfg.issuer.discoveryURL));
      seenDiscovery.add(cfg.issuer.discoveryURL);
    }
  });
  let anonymous: AnonymousConfig | undefined;
  if (doc.anonymous != null) {
    anonymous = { enabled: doc.anonymous.enabled === true, conditions: Array.isArray(doc.anonymous.conditions) ? doc.anonymous.conditions.map((c: any) => ({ path: String(c?.path ?? '') })) : [] };
    if (!anonymous.enabled && anonymous.conditions!.length) errs.push(fe.invalid('anonymous.conditions', anonymous.conditions, 'enabled should be set to true when conditions are defined'));
  }
  if (errs.length) throw new AuthenticationConfigError(aggregate(errs));
  return { jwt: out, ...(anonymous ? { anonymous } : {}) };
}

// The fields of AuthenticationConfiguration v1 (kube decodes the file strictly).
const SHAPE: any = {
  apiVersion: true,
  kind: true,
  jwt: [
    {
      issuer: { url: true, discoveryURL: true, certificateAuthority: true, audiences: true, audienceMatchPolicy: true, egressSelectorType: true },
      claimValidationRules: [{ claim: true, requiredValue: true, expression: true, message: true }],
      claimMappings: {
        username: { claim: true, prefix: true, expression: true },
        groups: { claim: true, prefix: true, expression: true },
        uid: { claim: true, expression: true },
        extra: [{ key: true, valueExpression: true }],
      },
      userValidationRules: [{ expression: true, message: true }],
    },
  ],
  anonymous: { enabled: true, conditions: [{ path: true }] },
};

function unknownFields(v: any, shape: any = SHAPE, path = ''): string[] {
  if (shape === true || v === null || typeof v !== 'object') return [];
  if (Array.isArray(shape)) return Array.isArray(v) ? v.flatMap((x, i) => unknownFields(x, shape[0], `${path}[${i}]`)) : [];
  if (Array.isArray(v)) return [];
  const out: string[] = [];
  for (const k of Object.keys(v)) {
    const p = path ? `${path}.${k}` : k;
    if (!(k in shape)) out.push(p);
    else out.push(...unknownFields(v[k], shape[k], p));
  }
  return out;
}

function validateURL(url: string, disallowed: Set<string>, p: string, errs: string[]): void {
  if (disallowed.has(url)) errs.push(fe.invalid(p, url, `URL must not overlap with disallowed issuers: [${[...disallowed].sort().join(' ')}]`));
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    errs.push(fe.invalid(p, url, `parse ${JSON.stringify(url)}: invalid URI for request`));
    return;
  }
  if (u.protocol !== 'https:') errs.push(fe.invalid(p, url, 'URL scheme must be https'));
  if (u.username || u.password) errs.push(fe.invalid(p, url, 'URL must not contain a username or password'));
  if (u.search) errs.push(fe.invalid(p, url, 'URL must not contain a query'));
  if (u.hash) errs.push(fe.invalid(p, url, 'URL must not contain a fragment'));
}

function compileInto(expr: string, vars: Record<string, string>, p: string, errs: string[]): void {
  const r = compileClaimsExpression(expr, vars);
  if (r.error) errs.push(fe.invalid(p, expr, r.error));
}

function validateJwt(j: any, p: string, disallowed: Set<string>, errs: string[]): JWTAuthenticatorConfig {
  const iss = j.issuer ?? {};
  const url: string = iss.url ?? '';
  if (!url) errs.push(fe.required(`${p}.issuer.url`));
  else validateURL(url, disallowed, `${p}.issuer.url`, errs);
  const discoveryURL: string = iss.discoveryURL ?? '';
  if (discoveryURL) {
    if (url && url.replace(/\/+$/, '') === discoveryURL.replace(/\/+$/, '')) errs.push(fe.invalid(`${p}.issuer.discoveryURL`, discoveryURL, 'discoveryURL must be different from URL'));
    validateURL(discoveryURL, new Set(), `${p}.issuer.discoveryURL`, errs);
  }
  const audiences: string[] = Array.isArray(iss.audiences) ? iss.audiences.map(String) : [];
  const policy: string = iss.audienceMatchPolicy ?? '';
  if (audiences.length === 0) errs.push(fe.required(`${p}.issuer.audiences`, `at least one ${p}.issuer.audiences is required`));
  else {
    const seen = new Set<string>();
    audiences.forEach((a, i) => {
      if (!a) errs.push(fe.required(`${p}.issuer.audiences[${i}]`));
      if (seen.has(a)) errs.push(fe.duplicate(`${p}.issuer.audiences[${i}]`, a));
      seen.add(a);
    });
    if (audiences.length > 1 && policy !== 'MatchAny') errs.push(fe.invalid(`${p}.issuer.audienceMatchPolicy`, policy, 'audienceMatchPolicy must be MatchAny for multiple audiences'));
    if (audiences.length === 1 && policy && policy !== 'MatchAny') errs.push(fe.invalid(`${p}.issuer.audienceMatchPolicy`, policy, 'audienceMatchPolicy must be empty or MatchAny for single audience'));
  }
  const ca: string = iss.certificateAuthority ?? '';
  if (ca) {
    try {
      const blocks = ca.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
      if (!blocks) throw new Error('data does not contain any valid RSA or ECDSA certificates');
      for (const b of blocks) new X509Certificate(b);
    } catch (e: any) {
      errs.push(fe.invalid(`${p}.issuer.certificateAuthority`, '<omitted>', e.message));
    }
  }
  // claimValidationRules
  const rules: any[] = Array.isArray(j.claimValidationRules) ? j.claimValidationRules : [];
  const seenClaims = new Set<string>();
  const seenExprs = new Set<string>();
  rules.forEach((r, i) => {
    const rp = `${p}.claimValidationRules[${i}]`;
    if (r.claim && r.expression) errs.push(fe.invalid(rp, r.claim, "claim and expression can't both be set"));
    else if (!r.claim && !r.expression) errs.push(fe.required(rp, 'claim or expression is required'));
    else if (r.claim) {
      if (r.message) errs.push(fe.invalid(`${rp}.message`, r.message, 'may not be specified when claim is set'));
      if (seenClaims.has(r.claim)) errs.push(fe.duplicate(`${rp}.claim`, r.claim));
      seenClaims.add(r.claim);
    } else {
      if (r.requiredValue) errs.push(fe.invalid(`${rp}.requiredValue`, r.requiredValue, 'may not be specified when expression is set'));
      if (seenExprs.has(r.expression)) errs.push(fe.duplicate(`${rp}.expression`, r.expression));
      else {
        seenExprs.add(r.expression);
        compileInto(r.expression, CLAIMS_VARS, `${rp}.expression`, errs);
      }
    }
  });
  // claimMappings
  const m = j.claimMappings ?? {};
  const prefixed = (x: any, fp: string, required: boolean) => {
    x = x ?? {};
    if (x.expression && x.claim) errs.push(fe.invalid(fp, '', "claim and expression can't both be set"));
    else if (!x.expression && !x.claim && required) errs.push(fe.required(fp, 'claim or expression is required'));
    else if (x.expression) {
      if (x.prefix != null) errs.push(fe.invalid(`${fp}.prefix`, x.prefix, 'may not be specified when expression is set'));
      compileInto(x.expression, CLAIMS_VARS, `${fp}.expression`, errs);
    } else if (x.claim && x.prefix == null) {
      errs.push(fe.required(`${fp}.prefix`, 'prefix is required when claim is set. It can be set to an empty string to disable prefixing'));
    }
    return x;
  };
  const username = prefixed(m.username, `${p}.claimMappings.username`, true);
  const groups = prefixed(m.groups, `${p}.claimMappings.groups`, false);
  const uid = m.uid ?? {};
  if (uid.claim && uid.expression) errs.push(fe.invalid(`${p}.claimMappings.uid`, '', "claim and expression can't both be set"));
  else if (uid.expression) compileInto(uid.expression, CLAIMS_VARS, `${p}.claimMappings.uid.expression`, errs);
  const extra: any[] = Array.isArray(m.extra) ? m.extra : [];
  const seenKeys = new Set<string>();
  extra.forEach((e, i) => {
    const ep = `${p}.claimMappings.extra[${i}]`;
    const key: string = e.key ?? '';
    if (!key) errs.push(fe.required(`${ep}.key`));
    else if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/\S+$/i.test(key)) errs.push(fe.invalid(`${ep}.key`, key, 'must be a domain-prefixed path (such as "acme.io/foo")'));
    if (key !== key.toLowerCase()) errs.push(fe.invalid(`${ep}.key`, key, 'must be lowercase'));
    const domain = key.includes('/') ? key.split('/')[0] : '';
    if (domain === 'kubernetes.io' || domain.endsWith('.kubernetes.io') || domain === 'k8s.io' || domain.endsWith('.k8s.io')) {
      errs.push(fe.invalid(`${ep}.key`, key, 'k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use'));
    }
    if (seenKeys.has(key)) {
      errs.push(fe.duplicate(`${ep}.key`, key));
      return;
    }
    seenKeys.add(key);
    if (!e.valueExpression) errs.push(fe.required(`${ep}.valueExpression`));
    else compileInto(e.valueExpression, CLAIMS_VARS, `${ep}.valueExpression`, errs);
  });
  // kube: an expression username reading claims.email must also read claims.email_verified
  const allClaimExprs = [username.expression, ...rules.map((r) => r.expression), ...extra.map((e) => e.valueExpression)].filter(Boolean).join('\n');
  if (username.expression && /\bclaims\s*\.\s*email\b(?!_)/.test(username.expression) && !/\bclaims\s*\.\s*\??email_verified\b/.test(allClaimExprs)) {
    errs.push(
      fe.invalid(
        `${p}.claimMappings.username.expression`,
        username.expression,
        'claims.email_verified must be used in claimMappings.username.expression or claimMappings.extra[*].valueExpression or claimValidationRules[*].expression when claims.email is used in claimMappings.username.expression',
      ),
    );
  }
  const userRules: any[] = Array.isArray(j.userValidationRules) ? j.userValidationRules : [];
  const seenUser = new Set<string>();
  userRules.forEach((r, i) => {
    const rp = `${p}.userValidationRules[${i}]`;
    if (!r.expression) return void errs.push(fe.required(`${rp}.expression`));
    if (seenUser.has(r.expression)) return void errs.push(fe.duplicate(`${rp}.expression`, r.expression));
    seenUser.add(r.expression);
    compileInto(r.expression, USER_VARS, `${rp}.expression`, errs);
  });
  return {
    issuer: { url, ...(discoveryURL ? { discoveryURL } : {}), ...(ca ? { certificateAuthority: ca } : {}), audiences, ...(policy ? { audienceMatchPolicy: policy } : {}) },
    claimValidationRules: rules.map((r) => ({ claim: r.claim, requiredValue: r.requiredValue, expression: r.expression, message: r.message })),
    claimMappings: {
      username: { claim: username.claim, prefix: username.prefix, expression: username.expression },
      ...(m.groups ? { groups: { claim: groups.claim, prefix: groups.prefix, expression: groups.expression } } : {}),
      ...(m.uid ? { uid: { claim: uid.claim, expression: uid.expression } } : {}),
      extra: extra.map((e) => ({ key: e.key, valueExpression: e.valueExpression })),
    },
    userValidationRules: userRules.map((r) => ({ expression: r.expression, message: r.message })),
  };
}
