// pods/portforward from a WebSocket client that tunnels SPDY in it (kubectl 1.33's
// "SPDY/3.1+portforward.k8s.io"), to a node that speaks SPDY/3.1 over a plain upgrade, as
// kube-apiserver's TunnelingHandler does (apiserver/pkg/util/proxy/streamtunnel.go; feature
// PortForwardWebsockets, beta, on): a real kubelet takes no such WebSocket. The request goes
// to the node as a SPDY upgrade (POST, Upgrade: SPDY/3.1, X-Stream-Protocol-Version: each
// offered tunneling protocol less its "SPDY/3.1+" prefix, the client's other headers passed
// on as the UpgradeAwareHandler passes them); once the node has switched, the client's
// WebSocket is accepted with "SPDY/3.1+" and the node's chosen protocol (none if the client
// did not offer it, as gorilla's Upgrader chooses), and the client's SPDY frames, carried in
// binary messages, go to the node byte for byte, and the node's bytes back as binary
// messages. A node that does not switch has its answer given to the client as it wrote it;
// one that cannot be reached is kube's "error dialing backend".
//
// Thread ownership: one tunnel per client connection, on the thread of the front end that
// accepted it.
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import type { ApiRequest, ResponseSink } from '../http/types.js';
import { dialFailure, forwardedHeaders, passRefusal, type UpgradeCarrier, type UpgradeTarget } from '../http/upgrade.js';
import { offeredProtocols } from '../http/ws-adopt.js';

/** portforward's WebsocketsSPDYTunnelingPrefix */
export const TUNNELING_PREFIX = 'SPDY/3.1+';
const HIGH_WATER = 1 << 20;

/** The SPDY protocols a WebSocket request tunnels (spdyProtocolsFromWebsocketProtocols). */
export function tunneledProtocols(headers: Record<string, string>): string[] {
  if ((headers.upgrade ?? '').toLowerCase() !== 'websocket') return [];
  return offeredProtocols(headers['sec-websocket-protocol'])
    .filter((p) => p.startsWith(TUNNELING_PREFIX) && p.endsWith('portforward.k8s.io'))
    .map((p) => p.slice(TUNNELING_PREFIX.length));
}

/** kube's IsWebSocketRequestWithTunnelingProtocol. */
export function offersTunnelingProtocol(headers: Record<string, string>): boolean {
  return (headers.upgrade ?? '').toLowerCase() === 'websocket' && offeredProtocols(headers['sec-websocket-protocol']).some((p) => p.startsWith(TUNNELING_PREFIX));
}

/** The client's WebSocket handshake headers, and what this side sets for the SPDY upgrade. */
const NOT_PASSED = /^(upgrade|connection|sec-websocket-.*|x-stream-protocol-version)$/;

/**
 * Tunnels one port-forward: resolves once the client is joined to the node (or has the node's
 * refusal); rejects, with nothing sent yet, when the node cannot be reached.
 */
export function tunnelPortForward(req: ApiRequest, up: UpgradeCarrier, sink: ResponseSink, target: UpgradeTarget): Promise<void> {
  const protocols = tunneledProtocols(req.headers);
  if (protocols.length === 0) {
    sink.send(400, [['Content-Type', 'text/plain; charset=utf-8']], Buffer.from('unable to upgrade: no tunneling spdy protocols provided\n'));
    return Promise.resolve();
  }
  const offered = offeredProtocols(req.headers['sec-websocket-protocol']);
  return new Promise<void>((resolve, reject) => {
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of forwardedHeaders(req, NOT_PASSED)) headers[k] = v;
    headers.Connection = 'Upgrade';
    headers.Upgrade = 'SPDY/3.1';
    headers['X-Stream-Protocol-Version'] = protocols;
    const host = target.url.hostname.replace(/^\[|\]$/g, '');
    const secure = target.url.protocol === 'https:';
    const r = (secure ? https : http).request({ ...(secure ? target.tls : {}), host, port: Number(target.url.port || (secure ? 443 : 80)), path: target.url.pathname + target.url.search, method: 'POST', headers, agent: false });
    let settled = false;
    r.on('upgrade', (answer, socket: Duplex, head: Buffer) => {
      settled = true;
      resolve();
      const connection = String(answer.headers.connection ?? '').toLowerCase();
      const upgrade = String(answer.headers.upgrade ?? '').toLowerCase();
      if (!connection.includes('upgrade') || !upgrade.includes('spdy/3.1')) {
        socket.destroy();
        sink.send(500, [['Content-Type', 'text/plain; charset=utf-8']], Buffer.from('unable to upgrade: missing upgrade headers in response\n'));
        return;
      }
      const chosen = String(answer.headers['x-stream-protocol-version'] ?? '').trim();
      const protocol = chosen && offered.includes(TUNNELING_PREFIX + chosen) ? TUNNELING_PREFIX + chosen : '';
      const ws = up.accept(protocol);
      if (!ws) {
        socket.destroy();
        return;
      }
      let closed = false;
      // client -> node: each binary message is some bytes of the client's SPDY connection
      ws.onMessage((data, binary) => {
        if (!binary || socket.destroyed) return;
        if (!socket.write(data) && socket.writableLength > HIGH_WATER) ws.pause();
      });
      socket.on('drain', () => ws.resume());
      // node -> client
      const toClient = (d: Buffer) => {
        ws.send(d);
        if (ws.bufferedAmount() > HIGH_WATER) socket.pause();
      };
      ws.onDrain(() => {
        if (ws.bufferedAmount() < HIGH_WATER / 2) socket.resume();
      });
      if (head.length) toClient(head);
      socket.on('data', toClient);
      const end = () => {
        if (closed) return;
        closed = true;
        ws.close(1000);
        socket.destroy();
      };
      socket.on('end', end);
      socket.on('close', end);
      socket.on('error', () => socket.destroy());
      ws.onClose(() => {
        closed = true;
        socket.destroy();
      });
    });
    r.on('response', (answer) => {
      // the node's refusal, given to the client as the node wrote it
      settled = true;
      resolve();
      passRefusal(answer, sink);
    });
    r.on('error', (e: NodeJS.ErrnoException) => {
      if (settled) return;
      settled = true;
      reject(dialFailure(e, target.url));
    });
    sink.onAborted(() => r.destroy());
    r.end();
  });
}
