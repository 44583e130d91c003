// pods/binding and the bindings resource (v1 Binding): assigns a pod to a node, as the
// scheduler does. It writes storage directly (kube's BindingREST): spec.nodeName, the
// binding's annotations, and the PodScheduled condition; a pod already bound or being
// deleted is a 409.
import { sendJson } from '../http/respond.js';
import { errors } from '../errors.js';
import { dryRunParam } from '../request/query.js';
import { parseBody } from '../codec/decode.js';
import { nowTimestamp, type ResourceTarget, type Store } from '../registry/store.js';
import type { FieldError } from '../registry/strategy.js';
import { createdStatus } from './eviction.js';
import type { HandlerContext } from './context.js';
import { admitSubresourceCreate } from './admission.js';

export async function handleBinding(c: HandlerContext): Promise<void> {
  const body: any = parseBody(c.req.body, c.req.headers['content-type']);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw errors.badRequest('the body must be a Binding object');
  const viaPod = c.info.subresource === 'binding';
  const name: string = viaPod ? c.info.name : (body.metadata?.name ?? '');
  if (viaPod && body.metadata?.name && body.metadata.name !== name) throw errors.badRequest('name in URL does not match name in Binding object');
  const errs: FieldError[] = [];
  const kind = body.target?.kind ?? '';
  if (kind !== '' && kind !== 'Node') errs.push({ field: 'target.kind', type: 'FieldValueNotSupported', value: kind, detail: 'supported values: "Node", "<empty>"' });
  if (!body.target?.name) errs.push({ field: 'target.name', type: 'FieldValueRequired' });
  if (errs.length) throw errors.invalid('Binding', '', name, errs);
  await admitSubresourceCreate(c, body, { group: '', version: 'v1', kind: 'Binding' }, name);
  const pods = c.targets.resolve('', 'v1', 'pods')!;
  await bindPod(c.store, pods, c.info.namespace, name, { node: body.target.name, uid: body.metadata?.uid, annotations: body.metadata?.annotations }, dryRunParam(c.req.query));
  sendJson(c.req, c.res, 201, createdStatus());
}

/**
 * The write of a binding (kube's BindingREST.assignPod), shared by pods/binding and the
 * in-process scheduler: spec.nodeName, the annotations, and PodScheduled=True; 409 when
 * the pod is bound already, being deleted, or not the uid given.
 */
export async function bindPod(store: Store, pods: ResourceTarget, namespace: string, name: string, b: { node: string; uid?: string; annotations?: Record<string, string> }, dryRun: boolean): Promise<void> {
  const conflict = (why: string) => errors.conflict({ group: '', resource: 'pods/binding' }, name, why);
  await store.storageUpdate(pods, namespace, name, dryRun, (pod) => {
    if (b.uid && b.uid !== pod.metadata.uid) {
      throw conflict(`Precondition failed: UID in precondition: ${b.uid}, UID in object meta: ${pod.metadata.uid}`);
    }
    if (pod.metadata.deletionTimestamp) throw conflict(`pod ${name} is being deleted, cannot be assigned to a host`);
    if (pod.spec?.nodeName) throw conflict(`pod ${name} is already assigned to node "${pod.spec.nodeName}"`);
    pod.spec = { ...(pod.spec ?? {}), nodeName: b.node };
    if (b.annotations) pod.metadata.annotations = { ...(pod.metadata.annotations ?? {}), ...b.annotations };
    const conditions: any[] = (pod.status?.conditions ?? []).filter((x: any) => x.type !== 'PodScheduled');
    conditions.push({ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: nowTimestamp() });
    pod.status = { ...(pod.status ?? {}), conditions };
  });
}
