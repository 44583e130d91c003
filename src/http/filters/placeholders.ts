// Filters whose place in the chain is fixed now and whose work comes with later issues.
import type { Filter } from '../filter-chain.js';

/** Impersonation (Impersonate-User / -Group headers): must sit between authn and authz. */
export const impersonationFilter: Filter = { name: 'impersonation', run() {} };
