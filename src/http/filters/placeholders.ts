// Filters whose place in the chain is fixed now and whose work comes with later issues.
import type { Filter } from '../filter-chain.js';

/** Audit (spec 6.2): will record each request with the authenticated user. */
export const auditFilter: Filter = { name: 'audit', run() {} };
