// The authenticating front proxy (kube's headerrequest authenticator wrapped in its x509
// CA verifier, apiserver/pkg/authentication/request/headerrequest/requestheader.go and
// request/x509's NewDynamicCAVerifier): the identity headers (X-Remote-User, -Group, -Uid,
// -Extra-*) are believed only from a connection whose client certificate chains to
// --requestheader-client-ca-file (client-auth usage, checked by the transport) and, when
// --requestheader-allowed-names is set, whose common name is listed. Anything else is "not
// mine": the request goes on to x509 and the bearer tokens with the headers ignored.
//
// The headers are removed from every request before any other filter runs (stripIdentityHeaders),
// trusted or not, so that nothing past authentication (the aggregator's proxy, audit, a
// handler) can mistake a client's own X-Remote-User for a vouched one.
//
// Thread ownership: immutable after construction; one per front thread (the factory runs
// per thread).
import { readFileSync } from 'node:fs';
import type { AuthRequest, AuthResult, RequestAuthenticatorMode } from '../authenticator.js';
import { registerRequestAuthenticator } from '../authenticator.js';
import type { UserInfo } from '../user.js';
import { features } from '../../features.js';
import { bundleFingerprints, chainReaches } from './ca-bundle.js';
import type { DynamicCaFile } from '../dynamic-ca-file.js';

export interface RequestHeaderConfig {
  /** PEM bundle of the front proxy's authorities */
  caFile: string;
  allowedNames: string[];
  usernameHeaders: string[];
  groupHeaders: string[];
  uidHeaders: string[];
  extraHeaderPrefixes: string[];
}

/** The flags' values with kube's suggested headers filled in where a flag was not given. */
export function requestHeaderConfig(o: {
  requestheaderClientCaFile: string;
  requestheaderAllowedNames: string[];
  requestheaderUsernameHeaders?: string[];
  requestheaderGroupHeaders?: string[];
  requestheaderUidHeaders?: string[];
  requestheaderExtraHeadersPrefix?: string[];
}): RequestHeaderConfig | null {
  if (!o.requestheaderClientCaFile) return null;
  const uid = o.requestheaderUidHeaders ?? [];
  // (kube refuses the UID headers while the gate is off; 1.33 has it on by default)
  if (uid.length && !features.enabled('RemoteRequestHeaderUID')) throw new Error('--requestheader-uid-headers requires the "RemoteRequestHeaderUID" feature to be enabled');
  return {
    caFile: o.requestheaderClientCaFile,
    allowedNames: o.requestheaderAllowedNames,
    usernameHeaders: o.requestheaderUsernameHeaders ?? ['X-Remote-User'],
    groupHeaders: o.requestheaderGroupHeaders ?? ['X-Remote-Group'],
    uidHeaders: uid,
    extraHeaderPrefixes: o.requestheaderExtraHeadersPrefix ?? ['X-Remote-Extra-'],
  };
}

/** A header's values: the transports join repeated headers with ", ", as Go keeps them as separate values. */
function values(v: string | undefined): string[] {
  if (!v) return [];
  return v.split(', ').filter((x) => x.length > 0);
}

/** kube's unescapeExtraKey: the key is percent-decoded (url.PathUnescape), kept as sent when malformed. */
function extraKey(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

export class RequestHeaderAuthenticator implements RequestAuthenticatorMode {
  readonly name = 'requestheader';
  /** the front proxy's authorities: fixed, or followed as the file changes (DynamicCaFile) */
  private readonly ca: { readonly fingerprints: Set<string> };
  private readonly allowed: Set<string> | null;
  // header names as the transports give them (lower case)
  private readonly user: string[];
  private readonly groups: string[];
  private readonly uid: string[];
  private readonly prefixes: string[];
  // what stripIdentityHeaders removes: kube's standard X-Remote-* set and the configured names
  private readonly stripNames: string[];
  private readonly stripPrefixes: string[];

  constructor(cfg: RequestHeaderConfig, ca?: { readonly fingerprints: Set<string> }) {
    this.ca = ca ?? { fingerprints: bundleFingerprints(readFileSync(cfg.caFile)) };
    if (this.ca.fingerprints.size === 0) throw new Error(`--requestheader-client-ca-file: no certificate found in "${cfg.caFile}"`);
    this.allowed = cfg.allowedNames.length ? new Set(cfg.allowedNames) : null;
    this.user = cfg.usernameHeaders.map((h) => h.toLowerCase());
    this.groups = cfg.groupHeaders.map((h) => h.toLowerCase());
    this.uid = cfg.uidHeaders.map((h) => h.toLowerCase());
    this.prefixes = cfg.extraHeaderPrefixes.map((h) => h.toLowerCase());
    this.stripNames = [...new Set(['x-remote-user', 'x-remote-uid', 'x-remote-group', ...this.user, ...this.uid, ...this.groups])];
    this.stripPrefixes = [...new Set(['x-remote-extra-', ...this.prefixes])];
  }

  /**
   * The identity the headers carry, read from the request's headers as they came in; the
   * caller strips them afterwards (stripIdentityHeaders), whatever the answer. As kube's CA
   * verifier: no certificate is not this authenticator's request; a certificate it does not
   * verify, or whose common name is not allowed, is an error the union notes and passes over
   * (x509 or a token may still authenticate the request; if nothing does, 401, never
   * anonymous); a trusted one without a user name header is simply not authenticated here.
   */
  authenticateRequest(req: AuthRequest): AuthResult {
    const cert = req.clientCert;
    if (!cert) return { ok: false };
    if (!chainReaches(cert.chainFingerprints, this.ca.fingerprints)) return { ok: false, error: 'verifying certificate failed: certificate signed by unknown authority' };
    if (this.allowed && !this.allowed.has(cert.commonName)) return { ok: false, error: `x509: subject with cn=${cert.commonName} is not in the allowed list` };
    const h = req.headers;
    let name = '';
    for (const k of this.user) if ((name = h[k] ?? '')) break;
    if (!name) return { ok: false };
    let uid = '';
    for (const k of this.uid) if ((uid = h[k] ?? '')) break;
    const groups: string[] = [];
    for (const k of this.groups) groups.push(...values(h[k]));
    const extra: Record<string, string[]> = {};
    let anyExtra = false;
    // prefixes first, so that each key's values keep the order of the prefixes (as kube)
    for (const p of this.prefixes) {
      for (const k in h) {
        if (k.length < p.length || !k.startsWith(p)) continue;
        const key = extraKey(k.slice(p.length));
        (extra[key] ??= []).push(...values(h[k]));
        anyExtra = true;
      }
    }
    // (system:authenticated is added by the filter, as kube's AuthenticatedGroupAdder)
    const user: UserInfo = { name, uid, groups, ...(anyExtra ? { extra } : {}) };
    return { ok: true, response: { user } };
  }

  /**
   * As kube's authentication filter (ClearAuthenticationHeaders twice): the standard
   * X-Remote-User/-Uid/-Group/-Extra-* headers and the configured ones all go, the UID
   * header even when it is not read.
   */
  stripIdentityHeaders(h: Record<string, string | undefined>): void {
    for (const k of this.stripNames) delete h[k];
    for (const k in h) if (this.stripPrefixes.some((p) => k.startsWith(p))) delete h[k];
  }
}

/**
 * kube's authentication filter clears the standard front-proxy headers (X-Remote-User,
 * -Uid, -Group, -Extra-*) of every authenticated request, front proxy configured or not
 * (its standardRequestHeaderConfig): used when no request-header authenticator is, so that
 * a client's own X-Remote-User never reaches a handler, audit or an aggregated server.
 * Cheap when the headers are absent: names are checked before anything is deleted.
 */
export function stripStandardIdentityHeaders(h: Record<string, string | undefined>): void {
  if (h['x-remote-user'] !== undefined) delete h['x-remote-user'];
  if (h['x-remote-uid'] !== undefined) delete h['x-remote-uid'];
  if (h['x-remote-group'] !== undefined) delete h['x-remote-group'];
  for (const k in h) if (k.charCodeAt(0) === 120 /* x */ && k.startsWith('x-remote-extra-')) delete h[k];
}

registerRequestAuthenticator('requestheader', (ctx) => {
  const cfg = requestHeaderConfig(ctx.options);
  // (the server's followed copy of the file when it has one: kube's dynamic CA verifier)
  return cfg ? new RequestHeaderAuthenticator(cfg, ctx.services.requestheaderCa as DynamicCaFile | undefined) : null;
});
