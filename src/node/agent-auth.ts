// Authentication and authorization of the agent's HTTPS API, as kubelet's webhook modes
// (pkg/kubelet/server/auth.go, apiserver's DelegatingAuthenticatorConfig and
// DelegatingAuthorizerConfig):
//   - a client certificate verified by --client-ca-file (authentication.x509.clientCAFile)
//     is the user CN in the groups O;
//   - else a bearer token is reviewed by the API server (TokenReview, results cached for
//     authentication.webhook.cacheTTL); a token the server does not accept is a 401;
//   - else the request is anonymous when authentication.anonymous.enabled, else a 401.
//   - Authorization: AlwaysAllow, or Webhook: a SubjectAccessReview per attribute set of
//     kubelet's GetRequestAttributes (verb from the method; resource nodes, name the node;
//     subresource stats, metrics, log, checkpoint or proxy by path, with pods, healthz,
//     configz, statusz tried before proxy under KubeletFineGrainedAuthz); the first allowed
//     set lets the request through. Decisions are cached (5 min allowed, 30 s denied).
//
// Thread ownership: the agent's main thread.
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { ApiClient } from './api-client.js';

export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export interface AuthOptions {
  nodeName: string;
  /** whether a client CA was configured (the TLS server verifies against it) */
  clientCA: boolean;
  webhookAuthn: boolean;
  anonymous: boolean;
  authzMode: 'AlwaysAllow' | 'Webhook';
  tokenCacheMs: number;
  allowedCacheMs: number;
  deniedCacheMs: number;
  fineGrainedAuthz: boolean;
}

export interface Attributes {
  verb: string;
  subresource: string;
  path: string;
}

const VERBS: Record<string, string> = { POST: 'create', GET: 'get', HEAD: 'get', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

/** path is the path itself or below it (kubelet's isSubpath). */
function isSubpath(sub: string, path: string): boolean {
  path = path.replace(/\/$/, '');
  return sub === path || (sub.startsWith(path) && sub[path.length] === '/');
}

/** kubelet's GetRequestAttributes: the attribute sets to try, in order. */
export function requestAttributes(method: string, path: string, fineGrained: boolean): Attributes[] {
  const verb = VERBS[method] ?? '';
  const subs: string[] = [];
  if (fineGrained) {
    if (isSubpath(path, '/pods') || isSubpath(path, '/runningpods')) subs.push('pods');
    else if (isSubpath(path, '/healthz')) subs.push('healthz');
    else if (isSubpath(path, '/configz')) subs.push('configz');
    else if (isSubpath(path, '/statusz')) subs.push('statusz');
  }
  if (isSubpath(path, '/stats')) subs.push('stats');
  else if (isSubpath(path, '/metrics')) subs.push('metrics');
  else if (isSubpath(path, '/logs')) subs.push('log');
  else if (isSubpath(path, '/checkpoint')) subs.push('checkpoint');
  else subs.push('proxy');
  return subs.map((subresource) => ({ verb, subresource, path }));
}

export type AuthResult = { ok: true; user: UserInfo } | { ok: false; status: 401 | 403 | 500; body: string };

export class AgentAuth {
  private readonly tokens = new Map<string, { user?: UserInfo; until: number }>();
  private readonly decisions = new Map<string, { allowed: boolean; until: number }>();

  constructor(
    private readonly api: ApiClient,
    private readonly opts: AuthOptions,
  ) {}

  async authenticate(req: IncomingMessage): Promise<UserInfo | undefined> {
    const sock = req.socket as TLSSocket;
    if (this.opts.clientCA && sock.authorized) {
      const cert = sock.getPeerCertificate?.();
      if (cert?.subject?.CN) {
        // a CA-verified certificate is for client auth only when it says so (or says nothing)
        const eku: string[] | undefined = (cert as any).ext_key_usage;
        if (!eku || eku.includes('1.3.6.1.5.5.7.3.2')) {
          const o = cert.subject.O as string | string[] | undefined;
          return { username: String(cert.subject.CN), groups: o === undefined ? [] : Array.isArray(o) ? o : [o] };
        }
      }
    }
    const auth = req.headers.authorization;
    const m = auth ? /^Bearer\s+(\S+)\s*$/i.exec(auth) : null;
    if (m && this.opts.webhookAuthn) {
      const token = m[1];
      const hit = this.tokens.get(token);
      if (hit && hit.until > Date.now()) return hit.user;
      const review = await this.api.post('/apis/authentication.k8s.io/v1/tokenreviews', { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } });
      const st = review?.status ?? {};
      const user: UserInfo | undefined = st.authenticated ? { username: st.user?.username ?? '', uid: st.user?.uid, groups: st.user?.groups ?? [], extra: st.user?.extra } : undefined;
      this.tokens.set(token, { user, until: Date.now() + this.opts.tokenCacheMs });
      if (this.tokens.size > 10_000) this.tokens.delete(this.tokens.keys().next().value!);
      return user;
    }
    if (m) return undefined; // a token and no way to check it: not anonymous
    if (this.opts.anonymous) return { username: 'system:anonymous', groups: ['system:unauthenticated'] };
    return undefined;
  }

  private async authorizeOne(user: UserInfo, a: Attributes): Promise<boolean> {
    if (this.opts.authzMode === 'AlwaysAllow') return true;
    const key = JSON.stringify([user.username, user.uid, user.groups, user.extra, a.verb, a.subresource]);
    const hit = this.decisions.get(key);
    if (hit && hit.until > Date.now()) return hit.allowed;
    const review = await this.api.post('/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: user.username,
        ...(user.uid ? { uid: user.uid } : {}),
        groups: user.groups,
        ...(user.extra ? { extra: user.extra } : {}),
        resourceAttributes: { verb: a.verb, group: '', version: 'v1', resource: 'nodes', subresource: a.subresource, name: this.opts.nodeName },
      },
    });
    const allowed = !!review?.status?.allowed;
    this.decisions.set(key, { allowed, until: Date.now() + (allowed ? this.opts.allowedCacheMs : this.opts.deniedCacheMs) });
    if (this.decisions.size > 10_000) this.decisions.delete(this.decisions.keys().next().value!);
    return allowed;
  }

  /** kubelet's auth filter: 401 "Unauthorized", 403 "Forbidden (...)", 500 on a review error. */
  async check(req: IncomingMessage): Promise<AuthResult> {
    let user: UserInfo | undefined;
    try {
      user = await this.authenticate(req);
    } catch {
      return { ok: false, status: 401, body: 'Unauthorized' };
    }
    if (!user) return { ok: false, status: 401, body: 'Unauthorized' };
    const path = new URL(req.url ?? '/', 'https://x').pathname;
    const attrs = requestAttributes(req.method ?? 'GET', path, this.opts.fineGrainedAuthz);
    for (const a of attrs) {
      try {
        if (await this.authorizeOne(user, a)) return { ok: true, user };
      } catch {
        return { ok: false, status: 500, body: `Authorization error (user=${user.username}, verb=${a.verb}, resource=nodes, subresource=${a.subresource})` };
      }
    }
    return { ok: false, status: 403, body: `Forbidden (user=${user.username}, verb=${attrs[0].verb}, resource=nodes, subresource(s)=[${attrs.map((a) => a.subresource).join(' ')}])\n` };
  }
}
