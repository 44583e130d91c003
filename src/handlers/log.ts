// pods/log, proxied to the agent of the pod's node as kube-apiserver proxies it to the kubelet
// (kube's LogLocation and LocationStreamer): the options and the container must be valid; a
// pod without a node yields an empty log; a node that is not there is a 404; otherwise the
// agent's /containerLogs answer is streamed to the client as it comes (follow keeps it open,
// backpressure pauses the agent's connection), on either front end.
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { errors } from '../errors.js';
import { sendText } from '../http/respond.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import type { HandlerContext } from './context.js';
import type { FieldError } from '../registry/strategy.js';
import { intParam } from '../request/query.js';
import { dialError, nodeLocation } from '../kubelet/kubelet-client.js';
import { boolParam } from './connect.js';

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

/** kube's streamParams for PodLogOptions: what goes on to the agent's /containerLogs. */
function agentLogParams(q: URLSearchParams): URLSearchParams {
  const p = new URLSearchParams();
  if (boolParam(q, 'follow')) p.set('follow', 'true');
  if (boolParam(q, 'previous')) p.set('previous', 'true');
  if (boolParam(q, 'timestamps')) p.set('timestamps', 'true');
  for (const k of ['limitBytes', 'sinceSeconds', 'tailLines']) {
    const v = intParam(q, k);
    if (v !== undefined) p.set(k, String(v));
  }
  const sinceTime = q.get('sinceTime');
  if (sinceTime) p.set('sinceTime', new Date(sinceTime).toISOString().replace(/\.000Z$/, 'Z'));
  p.sort();
  return p;
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
  const loc = await nodeLocation(c, nodeName);
  const q = agentLogParams(c.req.query).toString();
  const url = `https://${loc.hostPort}/containerLogs/${encodeURIComponent(pod.metadata.namespace)}/${encodeURIComponent(pod.metadata.name)}/${encodeURIComponent(container)}${q ? `?${q}` : ''}`;
  // kube's LocationStreamer: the agent's answer is streamed as it comes (kept open with follow)
  const answer = await new Promise<IncomingMessage>((resolve, reject) => {
    const r = https.get(url, { ...loc.tls, agent: false, headers: { 'User-Agent': c.req.headers['user-agent'] ?? 'kubeshard' } }, resolve);
    r.once('error', (e: NodeJS.ErrnoException) => reject(errors.backendRequest(`Get ${JSON.stringify(url)}: ${e.syscall ? `dial tcp ${loc.hostPort}: ${dialError(e, loc.host)}` : e.message}`)));
    c.res.onDone(() => r.destroy());
  });
  const status = answer.statusCode ?? 500;
  if (status < 200 || status > 299) {
    const chunks: Buffer[] = [];
    let n = 0;
    for await (const chunk of answer as AsyncIterable<Buffer>) {
      if (n < 4096) chunks.push(chunk);
      n += chunk.length;
    }
    throw errors.genericServerResponse(status, '', { group: '', resource: 'pods/log' }, c.info.name, Buffer.concat(chunks).subarray(0, 4096).toString().trim());
  }
  const res = c.res;
  if (res.aborted) {
    answer.destroy();
    return;
  }
  res.startStream(200, [['Content-Type', 'text/plain']]);
  answer.on('data', (chunk: Buffer) => {
    if (!res.write(chunk)) answer.pause();
  });
  res.onDrain(() => answer.resume());
  answer.on('end', () => res.end());
  answer.on('error', () => res.close());
  answer.on('aborted', () => res.close());
  res.onDone(() => answer.destroy());
}
