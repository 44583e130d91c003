// Authentication: bearer tokens from the static token file, then the TLS client
// certificate when the transport has one, else anonymous (when allowed). A credential
// that is presented and wrong is 401 at once; it never falls through to anonymous.
import type { Filter } from '../filter-chain.js';
import type { UserInfo } from '../../auth/user.js';
import { ANONYMOUS } from '../../auth/user.js';
import { errors } from '../../errors.js';

export interface AuthenticationOptions {
  tokens: Map<string, UserInfo>;
  anonymous: boolean;
}

function withAuthenticated(u: UserInfo): UserInfo {
  return u.groups.includes('system:authenticated') ? u : { ...u, groups: [...u.groups, 'system:authenticated'] };
}

export function authenticationFilter(opts: AuthenticationOptions): Filter {
  // Users are resolved once per token, not per request.
  const resolved = new Map<string, UserInfo>();
  for (const [t, u] of opts.tokens) resolved.set(t, withAuthenticated(u));
  // Header values already seen to carry a valid token: a client sends the same header on
  // every request, so most requests cost one map lookup. Bounded, and only valid ones enter.
  const byHeader = new Map<string, UserInfo>();
  return {
    name: 'authentication',
    run(req) {
      const auth = req.headers['authorization'];
      if (auth) {
        const known = byHeader.get(auth);
        if (known) {
          req.user = known;
          return;
        }
        const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
        const user = m ? resolved.get(m[1].trim()) : undefined;
        if (!user) throw errors.unauthorized();
        if (byHeader.size < 1024) byHeader.set(auth, user);
        req.user = user;
        return;
      }
      if (req.clientCert) {
        req.user = withAuthenticated({ name: req.clientCert.commonName, uid: '', groups: req.clientCert.organizations });
        return;
      }
      if (!opts.anonymous) throw errors.unauthorized();
      req.user = ANONYMOUS;
    },
  };
}
