// pods/eviction (policy/v1 Eviction): a delete that respects PodDisruptionBudgets, as
// kube-apiserver's EvictionREST. A pod that is not running (Pending, finished) or already
// being deleted is deleted at once; otherwise the one PDB whose selector matches it must
// allow a disruption, which is then used up (status.disruptionsAllowed decremented, the pod
// recorded in status.disruptedPods) before the pod is deleted with the eviction's options.
import { sendJson } from '../http/respond.js';
import { errors, StatusError } from '../errors.js';
import { dryRunParam } from '../request/query.js';
import { parseBody } from '../codec/decode.js';
import { validateSubresourceBody } from '../registry/field-validation.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import { nowTimestamp, type DeleteOptions } from '../registry/store.js';
import { selectorMatches } from '../registry/label-selector.js';
import type { HandlerContext } from './context.js';

const MAX_DISRUPTED_PODS = 2000;
const MAX_RETRIES = 5;
const DISRUPTION_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget.";

export function createdStatus(): string {
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 });
}

function tooManyRequests(cause: string): StatusError {
  return new StatusError(429, 'TooManyRequests', DISRUPTION_MESSAGE, { causes: [{ reason: 'DisruptionBudget', message: cause }] });
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

export async function handleEviction(c: HandlerContext): Promise<void> {
  const body: any = parseBody(c.req.body, c.req.headers['content-type']);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw errors.badRequest('the body must be an Eviction object');
  const name = c.info.name;
  validateSubresourceBody(c.target, 'eviction', 'create', c.req.query, body, null, (c.req.warnings ??= []), name);
  if (body.metadata?.name && body.metadata.name !== name) throw errors.badRequest('name in URL does not match name in Eviction object');
  const opts = evictionDeleteOptions(c, body);
  const ns = c.info.namespace;
  const pdbT = c.targets.preferred('policy', 'poddisruptionbudgets');

  for (let attempt = 0; ; attempt++) {
    const pod = entryObject(await c.store.get(c.target, ns, name, ''));
    const phase = pod.status?.phase;
    const ignorePdb = phase === 'Succeeded' || phase === 'Failed' || phase === 'Pending' || !!pod.metadata.deletionTimestamp;
    if (!ignorePdb && pdbT) {
      const pdbs = c.store
        .cacheOf(pdbT)
        .list(ns)
        .map((e) => ({ e, o: entryObject(e) }))
        .filter(({ o }) => selectorMatches(o?.spec?.selector, pod.metadata.labels));
      if (pdbs.length > 1) throw errors.internal('This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.');
      if (pdbs.length === 1) {
        const { e, o: pdb } = pdbs[0];
        const st = pdb.status ?? {};
        if ((st.observedGeneration ?? 0) < (pdb.metadata.generation ?? 0)) {
          throw tooManyRequests(`The disruption budget ${pdb.metadata.name} is still being processed by the server.`);
        }
        const allowed = st.disruptionsAllowed ?? 0;
        if (allowed < 0) throw errors.forbidden(pdbT.groupResource, pdb.metadata.name, 'pdb disruptions allowed is negative');
        if (Object.keys(st.disruptedPods ?? {}).length > MAX_DISRUPTED_PODS) {
          throw errors.forbidden(pdbT.groupResource, pdb.metadata.name, 'DisruptedPods map too big - too many evictions not confirmed by PDB controller');
        }
        if (allowed === 0) {
          throw tooManyRequests(`The disruption budget ${pdb.metadata.name} needs ${st.desiredHealthy ?? 0} healthy pods and has ${st.currentHealthy ?? 0} currently`);
        }
        if (!opts.dryRun) {
          try {
            // Use up one disruption, pinned to the budget we checked: a concurrent eviction retries.
            await c.store.guaranteedUpdate(pdbT, ns, e.name, { dryRun: false, subresource: 'status' }, (cur) => {
              cur.metadata.resourceVersion = String(e.rv);
              cur.status = { ...(cur.status ?? {}), disruptionsAllowed: allowed - 1, disruptedPods: { ...(cur.status?.disruptedPods ?? {}), [name]: nowTimestamp() } };
              return cur;
            });
          } catch (err) {
            if (err instanceof StatusError && err.code === 409 && attempt < MAX_RETRIES) continue;
            throw err;
          }
        }
      }
    }
    await c.store.delete(c.target, ns, name, opts);
    sendJson(c.req, c.res, 201, createdStatus());
    return;
  }
}
