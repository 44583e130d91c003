// pods/eviction (policy/v1 Eviction): a delete that respects PodDisruptionBudgets, as
// kube-apiserver's EvictionREST. A pod that is not running (Pending, finished) or already
// being deleted is deleted at once; otherwise the one PDB whose selector matches it must
// allow a disruption, which is then used up (status.disruptionsAllowed decremented, the pod
// recorded in status.disruptedPods) before the pod is deleted with the eviction's options.
import { sendJson } from '../http/respond.js';
import { errors, qualifiedResource, StatusError } from '../errors.js';
import { dryRunParam } from '../request/query.js';
import { parseBody } from '../codec/decode.js';
import { validateSubresourceBody } from '../registry/field-validation.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import { nowTimestamp, type DeleteOptions, type ResourceTarget } from '../registry/store.js';
import { selectorMatches } from '../registry/label-selector.js';
import type { HandlerContext } from './context.js';
import { admitSubresourceCreate } from './admission.js';

const MAX_DISRUPTED_PODS = 2000;
const MAX_RETRIES = 5;
const DISRUPTION_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget.";

export function createdStatus(): string {
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
}

/** 429 with a DisruptionBudget cause; retryAfter (seconds) also sets Retry-After, as kube's NewTooManyRequests. */
function tooManyRequests(cause: string, retryAfter = 0): StatusError {
  const details: any = { causes: [{ reason: 'DisruptionBudget', message: cause }] };
  if (retryAfter > 0) details.retryAfterSeconds = retryAfter;
  return new StatusError(429, 'TooManyRequests', DISRUPTION_MESSAGE, details, retryAfter > 0 ? { 'Retry-After': String(retryAfter) } : undefined);
}

/** kube's createTooManyRequestsError: the budget is not yet processed, or the pod changed under an eviction that pinned it. */
function stillProcessing(pdbName: string): StatusError {
  return tooManyRequests(`The disruption budget ${pdbName} is still being processed by the server.`, 10);
}

/** kube names the budget's resource in the singular here (policy.Resource("poddisruptionbudget")). */
function pdbForbidden(pdbName: string, why: string): StatusError {
  const gr = { group: 'policy', resource: 'poddisruptionbudget' };
  return errors.forbidden(gr, pdbName, `${qualifiedResource(gr)} "${pdbName}" is forbidden: ${why}`);
}

function isPodReady(pod: any): boolean {
  const c = (pod.status?.conditions ?? []).find((x: any) => x?.type === 'Ready');
  return c?.status === 'True';
}

/** Terminal, pending and terminating pods are deleted without consulting a budget. */
function canIgnorePdb(pod: any): boolean {
  const phase = pod.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed' || phase === 'Pending' || !!pod.metadata.deletionTimestamp;
}

/** Pinning the delete to the version seen guards against the pod becoming ready in between; not needed for terminal or terminating pods. */
function shouldEnforceResourceVersion(pod: any): boolean {
  const phase = pod.status?.phase;
  return !(phase === 'Succeeded' || phase === 'Failed' || !!pod.metadata.deletionTimestamp);
}

/** kube's SetStatusCondition for the budget's DisruptionAllowed condition (pdbhelper.UpdateDisruptionAllowedCondition). */
function setDisruptionAllowedCondition(status: any): void {
  const allowed = (status.disruptionsAllowed ?? 0) > 0;
  const want = { type: 'DisruptionAllowed', status: allowed ? 'True' : 'False', reason: allowed ? 'SufficientPods' : 'InsufficientPods', message: '', observedGeneration: status.observedGeneration ?? 0 };
  const conditions: any[] = Array.isArray(status.conditions) ? status.conditions : [];
  const i = conditions.findIndex((c) => c?.type === want.type);
  if (i < 0) conditions.push({ ...want, lastTransitionTime: nowTimestamp() });
  else {
    const old = conditions[i];
    conditions[i] = { ...old, ...want, lastTransitionTime: old.status !== want.status || !old.lastTransitionTime ? nowTimestamp() : old.lastTransitionTime };
  }
  status.conditions = conditions;
}

function evictionDeleteOptions(c: HandlerContext, body: any): DeleteOptions {
  const d = body?.deleteOptions ?? {};
  const o: DeleteOptions = { dryRun: dryRunParam(c.req.query) };
  if (Array.isArray(d.dryRun) && d.dryRun.length > 0) {
    if (d.dryRun.some((v: unknown) => v !== 'All')) throw errors.badRequest(`Invalid dry run value: ${JSON.stringify(d.dryRun)}, supported values: "All"`);
    o.dryRun = true;
  }
  if (typeof d.gracePeriodSeconds === 'number') o.gracePeriodSeconds = d.gracePeriodSeconds;
  if (typeof d.propagationPolicy === 'string') o.propagationPolicy = d.propagationPolicy;
  if (typeof d.orphanDependents === 'boolean') o.orphanDependents = d.orphanDependents;
  if (d.preconditions && typeof d.preconditions === 'object') o.preconditions = d.preconditions;
  return o;
}

/**
 * Adds the DisruptionTarget condition (reason EvictionByEvictionAPI) to the pod's status,
 * then deletes it, as kube's addConditionAndDeletePod: the status write checks the delete's
 * preconditions first, and a pinned resourceVersion moves to the version that write made.
 */
async function addConditionAndDelete(c: HandlerContext, ns: string, name: string, opts: DeleteOptions): Promise<void> {
  if (!opts.dryRun) {
    const pre = opts.preconditions;
    const r = await c.store.guaranteedUpdate(c.target, ns, name, { dryRun: false, subresource: 'status' }, (pod) => {
      if (pre?.uid && pre.uid !== pod.metadata.uid) {
        throw errors.conflict({ group: '', resource: 'Pod' }, name, `the UID in the precondition (${pre.uid}) does not match the UID in record (${pod.metadata.uid}). The object might have been deleted and then recreated`);
      }
      if (pre?.resourceVersion && pre.resourceVersion !== pod.metadata.resourceVersion) {
        throw errors.conflict({ group: '', resource: 'Pod' }, name, `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${pod.metadata.resourceVersion}). The object might have been modified`);
      }
      delete pod.metadata.resourceVersion;
      pod.status ??= {};
      const conditions: any[] = Array.isArray(pod.status.conditions) ? pod.status.conditions : [];
      const cond = { type: 'DisruptionTarget', status: 'True', lastProbeTime: null, lastTransitionTime: nowTimestamp(), reason: 'EvictionByEvictionAPI', message: 'Eviction API: evicting' };
      const i = conditions.findIndex((x) => x?.type === 'DisruptionTarget');
      if (i < 0) conditions.push(cond);
      else {
        if (conditions[i].status === cond.status) cond.lastTransitionTime = conditions[i].lastTransitionTime;
        conditions[i] = { ...conditions[i], ...cond };
      }
      pod.status.conditions = conditions;
      return pod;
    });
    if (pre?.resourceVersion) {
      opts = { ...opts, preconditions: { ...pre, resourceVersion: JSON.parse(r.json.toString('utf8')).metadata.resourceVersion } };
    }
  }
  await c.store.delete(c.target, ns, name, opts);
}

function isConflict(e: unknown): boolean {
  return e instanceof StatusError && e.code === 409;
}

export async function handleEviction(c: HandlerContext): Promise<void> {
  const body: any = parseBody(c.req.body, c.req.headers['content-type']);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw errors.badRequest('the body must be an Eviction object');
  const name = c.info.name;
  validateSubresourceBody(c.target, 'eviction', 'create', c.req.query, body, null, (c.req.warnings ??= []), name);
  if (body.metadata?.name && body.metadata.name !== name) throw errors.badRequest('name in URL does not match name in Eviction object');
  const original = evictionDeleteOptions(c, body);
  await admitSubresourceCreate(c, body, { group: 'policy', version: 'v1', kind: 'Eviction' });
  const userPinned = !!original.preconditions?.resourceVersion;
  const ns = c.info.namespace;
  const pdbT = c.targets.preferred('policy', 'poddisruptionbudgets');
  const done = () => sendJson(c.req, c.res, 201, createdStatus());

  // A pod that needs no budget is deleted at once (pinned to the version seen, unless the
  // client pinned one); a conflict retries with the fresh pod unless the client pinned it.
  let pod: any;
  for (let attempt = 0; ; attempt++) {
    pod = entryObject(await c.store.get(c.target, ns, name, ''));
    if (!canIgnorePdb(pod)) break;
    let opts = original;
    if (shouldEnforceResourceVersion(pod) && !userPinned) opts = { ...opts, preconditions: { ...(opts.preconditions ?? {}), resourceVersion: pod.metadata.resourceVersion } };
    try {
      await addConditionAndDelete(c, ns, name, opts);
      done();
      return;
    } catch (e) {
      if (isConflict(e) && !userPinned && attempt < MAX_RETRIES) continue;
      throw e;
    }
  }

  let pdbName = '';
  let pinToPod = false;
  if (pdbT) {
    const pdbs = c.store
      .cacheOf(pdbT)
      .list(ns)
      .map((e) => entryObject(e))
      .filter((o) => selectorMatches(o?.spec?.selector, pod.metadata.labels));
    if (pdbs.length > 1) throw errors.internal('This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.');
    if (pdbs.length === 1) {
      const pdb = pdbs[0];
      pdbName = pdb.metadata.name;
      // An unready pod does not count as healthy: deleting it takes nothing from the budget
      // when the budget always allows it, or (IfHealthyBudget, the default) while the
      // application is healthy enough.
      if (!isPodReady(pod)) {
        const st = pdb.status ?? {};
        if (pdb.spec?.unhealthyPodEvictionPolicy === 'AlwaysAllow') pinToPod = true;
        else if ((st.currentHealthy ?? 0) >= (st.desiredHealthy ?? 0) && (st.desiredHealthy ?? 0) > 0) pinToPod = true;
      }
      if (!pinToPod) await checkAndDecrement(c, pdbT, ns, name, pdbName, original.dryRun === true);
    }
  }

  let opts = original;
  // Pinned so that the pod has not become ready since it was judged unready.
  if (pinToPod) opts = { ...opts, preconditions: { ...(opts.preconditions ?? {}), resourceVersion: pod.metadata.resourceVersion } };
  try {
    await addConditionAndDelete(c, ns, name, opts);
  } catch (e) {
    if (isConflict(e) && pinToPod && !userPinned) throw stillProcessing(pdbName);
    throw e;
  }
  done();
}

/** Uses up one disruption of the budget (kube's checkAndDecrement), re-reading it when a concurrent eviction won. */
async function checkAndDecrement(c: HandlerContext, pdbT: ResourceTarget, ns: string, podName: string, pdbName: string, dryRun: boolean): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const e = await c.store.get(pdbT, ns, pdbName, '');
    const pdb = entryObject(e);
    const st = pdb.status ?? {};
    if ((st.observedGeneration ?? 0) < (pdb.metadata.generation ?? 0)) throw stillProcessing(pdbName);
    const allowed = st.disruptionsAllowed ?? 0;
    if (allowed < 0) throw pdbForbidden(pdbName, 'pdb disruptions allowed is negative');
    if (Object.keys(st.disruptedPods ?? {}).length > MAX_DISRUPTED_PODS) {
      throw pdbForbidden(pdbName, 'DisruptedPods map too big - too many evictions not confirmed by PDB controller');
    }
    if (allowed === 0) {
      throw tooManyRequests(`The disruption budget ${pdbName} needs ${st.desiredHealthy ?? 0} healthy pods and has ${st.currentHealthy ?? 0} currently`);
    }
    if (dryRun) return;
    try {
      // Pinned to the budget just checked: a concurrent eviction makes this one check again.
      await c.store.guaranteedUpdate(pdbT, ns, pdbName, { dryRun: false, subresource: 'status' }, (cur) => {
        cur.metadata.resourceVersion = String(e.rv);
        const status = { ...(cur.status ?? {}) };
        status.disruptionsAllowed = allowed - 1;
        if (status.disruptionsAllowed === 0) setDisruptionAllowedCondition(status);
        status.disruptedPods = { ...(status.disruptedPods ?? {}), [podName]: nowTimestamp() };
        cur.status = status;
        return cur;
      });
      return;
    } catch (err) {
      if (isConflict(err) && attempt < MAX_RETRIES) continue;
      if (isConflict(err)) throw new StatusError(504, 'Timeout', `Timeout: couldn't update PodDisruptionBudget "${pdbName}" due to conflicts`, { retryAfterSeconds: 10 });
      throw err;
    }
  }
}
