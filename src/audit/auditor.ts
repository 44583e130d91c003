// The audit configuration the server runs with: the policy and the backends the --audit-*
// flags ask for. Built once at start; a bad policy or webhook config stops start-up.
import type { AuditOptions } from './audit-options.js';
import { backendOf, UnionBackend, type Backend } from './backend.js';
import { LogWriter } from './log-backend.js';
import { loadPolicyFile, type Policy } from './policy.js';
import { loadWebhookConfig, WebhookWriter } from './webhook-backend.js';
import { RemoteBackend } from './remote-backend.js';
import type { MessagePort } from 'node:worker_threads';
import { countedBackend } from './backend-metrics.js';
import { apiserverMetrics } from '../metrics/apiserver-metrics.js';

export interface Auditor {
  policy: Policy;
  backend: Backend;
  /** a blocking-strict backend: failing to store RequestReceived fails the request */
  strict: boolean;
}

/**
 * The auditor, or null when nothing is audited (no policy, or no backend): then the
 * server leaves the audit filter out of the chain and requests pay nothing for it. The
 * policy file is read whenever it is given, so a bad one fails start-up either way.
 */
export function createAuditor(o: AuditOptions, mainThread?: MessagePort): Auditor | null {
  const policy = o.policyFile ? loadPolicyFile(o.policyFile) : null;
  // another front thread: the main thread's backends store its events (remote-backend.ts)
  if (mainThread) {
    if (!policy || (!o.log.path && !o.webhook.configFile)) return null;
    const strict = (!!o.log.path && o.log.mode === 'blocking-strict') || (!!o.webhook.configFile && o.webhook.mode === 'blocking-strict');
    return { policy, backend: new RemoteBackend(mainThread), strict };
  }
  const backends: Backend[] = [];
  let strict = false;
  if (o.log.path) {
    let w: LogWriter;
    try {
      w = new LogWriter(o.log);
    } catch (e) {
      throw new Error(`failed to open audit log file "${o.log.path}": ${(e as Error).message}`);
    }
    backends.push(countedBackend(backendOf(w, o.log.mode, o.log.batch, o.log.truncate), apiserverMetrics, 'log'));
    strict ||= o.log.mode === 'blocking-strict';
  }
  if (o.webhook.configFile) {
    const w = new WebhookWriter(loadWebhookConfig(o.webhook.configFile), o.webhook.initialBackoff, o.webhook.version);
    backends.push(countedBackend(backendOf(w, o.webhook.mode, o.webhook.batch, o.webhook.truncate), apiserverMetrics, 'webhook'));
    strict ||= o.webhook.mode === 'blocking-strict';
  }
  if (!policy) {
    if (backends.length) console.warn('W audit: no audit policy file provided, no events will be recorded');
    for (const b of backends) void b.shutdown();
    return null;
  }
  if (!backends.length) return null;
  return { policy, backend: countedBackend(backends.length === 1 ? backends[0] : new UnionBackend(backends), apiserverMetrics, null), strict };
}
