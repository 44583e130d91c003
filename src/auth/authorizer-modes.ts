// Builds the authorization chain from --authorization-mode (kube's authorizer config
// New(): one authorizer per mode, in the flag's order, joined by the union). The built-in
// modes are made here; Webhook, ABAC and Node come from the registry
// (registerAuthorizerMode), which their modules fill when imported.
import { authorizerModeFactory, type AuthorizerMode, type AuthorizerModeContext } from './authorizer.js';
import { AuthorizerUnion } from './authorizer-union.js';
import { alwaysAllow, alwaysDeny } from './authorizers/always.js';
import { RbacMode } from './authorizers/rbac.js';
import type { RbacResolver } from './rbac/resolver.js';
import './authorizers/webhook.js';
import './authorizers/abac.js';
import './node/node-mode.js';

/** Node until its authorizer registers: no opinion (system:node:* identities get nothing from it). */
const nodeNoOpinion: AuthorizerMode = { name: 'Node', authorize: () => ({ decision: 'NoOpinion', reason: '' }) };

export function authorizerMode(name: string, ctx: AuthorizerModeContext): AuthorizerMode {
  switch (name) {
    case 'AlwaysAllow':
      return alwaysAllow;
    case 'AlwaysDeny':
      return alwaysDeny;
    case 'RBAC': {
      const rbac = ctx.services.rbac as RbacResolver | undefined;
      if (!rbac) throw new Error('authorization mode RBAC needs the RBAC resolver');
      return new RbacMode(rbac);
    }
  }
  const factory = authorizerModeFactory(name);
  if (factory) return factory(ctx);
  if (name === 'Node') return nodeNoOpinion;
  throw new Error(`unknown authorization mode ${JSON.stringify(name)}`);
}

export function buildAuthorizer(modes: string[], ctx: AuthorizerModeContext): AuthorizerUnion {
  return new AuthorizerUnion(modes.map((m) => authorizerMode(m, ctx)));
}
