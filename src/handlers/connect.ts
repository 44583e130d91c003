// pods/exec, pods/attach and pods/portforward: kube's ExecREST, AttachREST and PortForwardREST
// (pkg/registry/core/pod/rest/subresources.go) with the locations of pod/strategy.go
// (ExecLocation, AttachLocation, PortForwardLocation, streamLocation): the pod's container
// and node are checked, the agent's URL is built, and the upgrade is carried on to it by the
// front end (src/http/upgrade.ts), as kube's UpgradeAwareHandler does, or, for WebSocket
// clients, translated as kube's translating handlers do: exec and attach offering
// v5.channel.k8s.io are terminated here and spoken to the node over SPDY/3.1
// (src/kubelet/stream-translator.ts, gate TranslateStreamCloseWebsocketRequests), and
// port-forward's SPDY tunneled in a WebSocket goes to the node as a plain SPDY upgrade
// (src/kubelet/stream-tunnel.ts, gate PortForwardWebsockets): a real kubelet speaks SPDY.
// Other upgrades (plain SPDY, a v4 WebSocket) are carried on as they came. The authorization
// filter has already checked the verb (get for a WebSocket's GET, create for a POST).
import { errors } from '../errors.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import { nodeLocation } from '../kubelet/kubelet-client.js';
import { attributesOfRequest, forbiddenError } from '../http/filters/authorization.js';
import { connectTarget } from '../http/upgrade.js';
import { features } from '../features.js';
import { offersStreamCloseProtocol, translateRemoteCommand, type RemoteCommandOptions } from '../kubelet/stream-translator.js';
import { offersTunnelingProtocol, tunnelPortForward } from '../kubelet/stream-tunnel.js';
import type { HandlerContext } from './context.js';

const names = (cs: unknown): string[] => (Array.isArray(cs) ? cs.map((c) => c?.name).filter((n) => typeof n === 'string') : []);

/** Go's strconv.ParseBool, as the query parameter codec reads a boolean option. */
export function boolParam(q: URLSearchParams, key: string): boolean {
  const v = q.get(key);
  if (v === null || v === '') return false;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  throw errors.badRequest(`strconv.ParseBool: parsing ${JSON.stringify(v)}: invalid syntax`);
}

/** streamLocation's container check: a named one must exist (ephemeral ones too); none named picks the only one. */
export function streamContainer(pod: any, container: string): string {
  const name = pod.metadata.name;
  const spec = pod.spec ?? {};
  if (!container) {
    const cs = names(spec.containers);
    if (cs.length === 1) return cs[0];
    if (cs.length === 0) throw errors.badRequest(`a container name must be specified for pod ${name}`);
    let msg = `a container name must be specified for pod ${name}, choose one of: [${cs.join(' ')}]`;
    const init = names(spec.initContainers);
    if (init.length) msg += ` or one of the init containers: [${init.join(' ')}]`;
    throw errors.badRequest(msg);
  }
  const all = [...names(spec.initContainers), ...names(spec.containers), ...names(spec.ephemeralContainers)];
  if (!all.includes(container)) throw errors.badRequest(`container ${container} is not valid for pod ${name}`);
  return container;
}

async function podOf(c: HandlerContext): Promise<any> {
  return entryObject(await c.store.get(c.target, c.info.namespace, c.info.name, ''));
}

/** The agent's URL of a streaming endpoint of the pod's node. */
async function agentUrl(c: HandlerContext, pod: any, path: string, params: URLSearchParams): Promise<{ url: URL; tls: import('node:tls').ConnectionOptions }> {
  const nodeName: string = pod.spec?.nodeName ?? '';
  if (!nodeName) throw errors.badRequest(`pod ${pod.metadata.name} does not have a host assigned`);
  const loc = await nodeLocation(c, nodeName);
  params.sort();
  const q = params.toString();
  const url = new URL(`https://${loc.hostPort}${path}${q ? `?${q}` : ''}`);
  return { url, tls: loc.tls };
}

const seg = (s: string) => encodeURIComponent(s);

/**
 * kube's AuthorizePodWebsocketUpgradeCreatePermission (beta, on since 1.31): a WebSocket
 * comes as a GET, authorized as get; exec, attach and port-forward also need create, the
 * verb their POST (SPDY) always needed.
 */
async function checkCreate(c: HandlerContext): Promise<void> {
  if (c.info.verb !== 'get' || !c.req.authorize) return;
  const d = await c.req.authorize('create');
  if (!d.allowed) throw forbiddenError(attributesOfRequest(c.req, 'create'), d.reason);
}

async function carry(c: HandlerContext, target: { url: URL; tls: import('node:tls').ConnectionOptions }): Promise<void> {
  const up = c.req.upgrade;
  // kube's UpgradeAwareHandler with UpgradeRequired: a plain request is refused (and so is a
  // SPDY upgrade on the uWS front end, which cannot take its socket over; kubectl 1.33 asks
  // for a WebSocket first)
  if (!up) {
    const asked = c.req.headers.upgrade;
    if (!asked) throw errors.badRequest('Upgrade request required');
    // An upgrade the front end cannot carry (SPDY on uWS, usually kubectl's fallback after a
    // refused WebSocket): an agent that cannot be reached still says so, as it would have.
    (await connectTarget(target)).destroy();
    throw errors.badRequest(`Upgrade request required: ${asked} upgrades are not served by this front end (uWebSockets.js); use a WebSocket client (kubectl 1.30 or later) or --front-end=http2`);
  }
  await up.proxy(target);
}

/** pods/exec and pods/attach (ExecLocation, AttachLocation). */
export async function handleExecOrAttach(c: HandlerContext): Promise<void> {
  await checkCreate(c);
  const q = c.req.query;
  const exec = c.info.subresource === 'exec';
  const opts = { stdin: boolParam(q, 'stdin'), stdout: boolParam(q, 'stdout'), stderr: boolParam(q, 'stderr'), tty: boolParam(q, 'tty') };
  const command = q.getAll('command');
  const pod = await podOf(c);
  const container = streamContainer(pod, q.get('container') ?? '');
  // kube's streamParams: the kubelet's names (api.ExecStdinParam "input", ...), "1" for true
  const params = new URLSearchParams();
  if (opts.stdin) params.append('input', '1');
  if (opts.stdout) params.append('output', '1');
  if (opts.stderr) params.append('error', '1');
  if (opts.tty) params.append('tty', '1');
  if (exec) for (const part of command) params.append('command', part);
  const path = `/${exec ? 'exec' : 'attach'}/${seg(pod.metadata.namespace)}/${seg(pod.metadata.name)}/${seg(container)}`;
  const target = await agentUrl(c, pod, path, params);
  // kube's translatingHandler with IsWebSocketRequestWithStreamCloseProtocol
  const up = c.req.upgrade;
  if (up?.protocol === 'websocket' && features.enabled('TranslateStreamCloseWebsocketRequests') && offersStreamCloseProtocol(c.req.headers)) {
    translateRemoteCommand(up, target, opts satisfies RemoteCommandOptions);
    return;
  }
  await carry(c, target);
}

/** pods/portforward (PortForwardLocation). */
export async function handlePortForward(c: HandlerContext): Promise<void> {
  await checkCreate(c);
  const params = new URLSearchParams();
  for (const p of c.req.query.getAll('ports')) {
    for (const one of p.split(',')) {
      const n = Number(one);
      if (!/^\d+$/.test(one) || n < 1 || n > 65535) throw errors.badRequest(`invalid port ${JSON.stringify(one)}`);
      params.append('port', one);
    }
  }
  const pod = await podOf(c);
  const path = `/portForward/${seg(pod.metadata.namespace)}/${seg(pod.metadata.name)}`;
  const target = await agentUrl(c, pod, path, params);
  // kube's translatingHandler with IsWebSocketRequestWithTunnelingProtocol
  const up = c.req.upgrade;
  if (up?.protocol === 'websocket' && features.enabled('PortForwardWebsockets') && offersTunnelingProtocol(c.req.headers)) {
    await tunnelPortForward(c.req, up, c.res, target);
    return;
  }
  await carry(c, target);
}
