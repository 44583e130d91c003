// pods/log. kube-apiserver proxies it to the kubelet of the pod's node; this server has no node
// agents, so it answers what kube-apiserver answers before and when that proxying fails (kube's
// LogLocation and LocationStreamer): the container must be valid; a pod without a node yields
// an empty log; a node that is not there is a 404; otherwise the kubelet cannot be reached.
import { connect } from 'node:net';
import { errors, StatusError } from '../errors.js';
import { sendText } from '../http/respond.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import type { HandlerContext } from './context.js';
import type { FieldError } from '../registry/strategy.js';
import { intParam } from '../request/query.js';

/** kube-apiserver's --kubelet-preferred-address-types default order. */
const ADDRESS_TYPES = ['Hostname', 'InternalDNS', 'InternalIP', 'ExternalDNS', 'ExternalIP'];
const KUBELET_PORT = 10250;

const names = (cs: unknown): string[] => (Array.isArray(cs) ? cs.map((c) => c?.name).filter((n) => typeof n === 'string') : []);

/** kube's validateContainer: a named container must exist; none named picks the only one. */
export function logContainer(pod: any, container: string): string {
  const name = pod.metadata.name;
  const spec = pod.spec ?? {};
  if (!container) {
    const cs = names(spec.containers);
    if (cs.length === 1) return cs[0];
    if (cs.length === 0) throw errors.badRequest(`a container name must be specified for pod ${name}`);
    const all = [...names(spec.initContainers), ...cs, ...names(spec.ephemeralContainers)];
    throw errors.badRequest(`a container name must be specified for pod ${name}, choose one of: [${all.join(' ')}]`);
  }
  const all = [...names(spec.initContainers), ...names(spec.containers), ...names(spec.ephemeralContainers)];
  if (!all.includes(container)) throw errors.badRequest(`container ${container} is not valid for pod ${name}`);
  return container;
}

/** How a TCP connect to the kubelet failed, in Go's words. */
function dial(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const s = connect({ host, port, timeout: 3000 });
    const done = (r: string | null) => {
      s.destroy();
      resolve(r);
    };
    s.once('connect', () => done(null));
    s.once('timeout', () => done('i/o timeout'));
    s.once('error', (e: NodeJS.ErrnoException) =>
      done(e.code === 'ECONNREFUSED' ? 'connect: connection refused' : e.code === 'EHOSTUNREACH' ? 'connect: no route to host' : e.code === 'ENOTFOUND' ? `lookup ${host}: no such host` : e.message),
    );
  });
}

/** RFC 3339 as Go's time.Parse reads it for a metav1.Time query parameter. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * PodLogOptions from the query as kube's parameter codec decodes them (a value that does not
 * convert is 400) and then kube's ValidatePodLogOptions (422 on PodLogOptions, named after the
 * pod), both before the pod is looked at.
 */
function checkLogOptions(q: URLSearchParams, name: string): void {
  const tailLines = intParam(q, 'tailLines');
  const sinceSeconds = intParam(q, 'sinceSeconds');
  const limitBytes = intParam(q, 'limitBytes');
  const sinceTime = q.get('sinceTime');
  if (sinceTime !== null && sinceTime !== '' && !(RFC3339.test(sinceTime) && !Number.isNaN(Date.parse(sinceTime)))) {
    throw errors.badRequest(`parsing time ${JSON.stringify(sinceTime)} as "2006-01-02T15:04:05Z07:00": cannot parse ${JSON.stringify(sinceTime)} as "2006"`);
  }
  const errs: FieldError[] = [];
  if (tailLines !== undefined && tailLines < 0) errs.push({ field: 'tailLines', type: 'FieldValueInvalid', value: tailLines, detail: 'must be greater than or equal to 0' });
  if (limitBytes !== undefined && limitBytes < 1) errs.push({ field: 'limitBytes', type: 'FieldValueInvalid', value: limitBytes, detail: 'must be greater than 0' });
  if (sinceSeconds !== undefined && sinceTime) errs.push({ field: '', type: 'FieldValueForbidden', detail: 'at most one of `sinceTime` or `sinceSeconds` may be specified' });
  if (sinceSeconds !== undefined && sinceSeconds < 1) errs.push({ field: 'sinceSeconds', type: 'FieldValueInvalid', value: sinceSeconds, detail: 'must be greater than 0' });
  if (errs.length) throw errors.invalid('PodLogOptions', '', name, errs);
}

export async function handleLog(c: HandlerContext): Promise<void> {
  checkLogOptions(c.req.query, c.info.name);
  const pod = entryObject(await c.store.get(c.target, c.info.namespace, c.info.name, ''));
  const container = logContainer(pod, c.req.query.get('container') ?? '');
  const nodeName: string = pod.spec?.nodeName ?? '';
  if (!nodeName) {
    // No node: kube has no location to stream from and answers an empty log.
    sendText(c.res, 200, '');
    return;
  }
  const node = entryObject(await c.store.get(c.targets.resolve('', 'v1', 'nodes')!, '', nodeName, ''));
  const addrs: any[] = Array.isArray(node.status?.addresses) ? node.status.addresses : [];
  let host = '';
  for (const t of ADDRESS_TYPES) {
    const a = addrs.find((x) => x?.type === t && x.address);
    if (a) {
      host = a.address;
      break;
    }
  }
  if (!host) {
    const known = addrs.map((a) => `{${a?.type} ${a?.address}}`).join(' ');
    throw new StatusError(500, '', `no preferred addresses found; known addresses: [${known}]`);
  }
  const port = node.status?.daemonEndpoints?.kubeletEndpoint?.Port > 0 ? node.status.daemonEndpoints.kubeletEndpoint.Port : KUBELET_PORT;
  const hostPort = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  const url = `https://${hostPort}/containerLogs/${pod.metadata.namespace}/${pod.metadata.name}/${container}`;
  const failure = await dial(host, port);
  // Something listens there, but this server does not speak the kubelet API.
  const why = failure ? `dial tcp ${hostPort}: ${failure}` : 'kubelet connections are not supported by this server';
  throw new StatusError(500, '', `Get ${JSON.stringify(url)}: ${why}`);
}
