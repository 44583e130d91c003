// AlwaysAllow and AlwaysDeny (kube's authorizerfactory.NewAlwaysAllowAuthorizer and
// NewAlwaysDenyAuthorizer). AlwaysDeny has no opinion, as kube's: a later mode may still allow.
// Stateless.
import type { AuthorizerMode, AuthorizerResult } from '../authorizer.js';
import type { Rules } from '../attributes.js';

const ALLOW: AuthorizerResult = { decision: 'Allow', reason: '' };
const DENY: AuthorizerResult = { decision: 'NoOpinion', reason: 'Everything is forbidden.' };

export const alwaysAllow: AuthorizerMode = {
  name: 'AlwaysAllow',
  fixed: true,
  authorize: () => ALLOW,
  // everything, on every resource and URL
  rulesFor: (): Rules => ({
    resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }],
    nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
    incomplete: false,
  }),
};

export const alwaysDeny: AuthorizerMode = {
  name: 'AlwaysDeny',
  fixed: true,
  authorize: () => DENY,
  rulesFor: (): Rules => ({ resourceRules: [], nonResourceRules: [], incomplete: false }),
};
