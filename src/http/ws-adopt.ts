// A WebSocket over a socket whose handshake was done here rather than by ws. kube's
// subprotocol names break ws's handshake checks: "SPDY/3.1+portforward.k8s.io" (kubectl's
// tunneled port-forward) holds a "/", which is no token character, so ws's client refuses to
// offer it and ws's server refuses the request. The handshake is short (RFC 6455 4.2.2), and
// the framing is ws's own, through its setSocket (what ws's server and client both call once
// their handshake is done).
//
// Thread ownership: stateless.
import { createHash, randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { WebSocket } from 'ws';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** Sec-WebSocket-Accept for a key. */
export function acceptKey(key: string): string {
  return createHash('sha1').update(key + GUID).digest('base64');
}

/** a fresh Sec-WebSocket-Key */
export function newKey(): string {
  return randomBytes(16).toString('base64');
}

/** The protocols a Sec-WebSocket-Protocol header offers, in its order. */
export function offeredProtocols(header: string | string[] | undefined): string[] {
  const v = Array.isArray(header) ? header.join(',') : (header ?? '');
  return v
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
}

/** A ws WebSocket on a socket past its handshake: the server's side (unmasked frames out) or the client's. */
export function adoptWebSocket(socket: Duplex, head: Buffer, role: 'server' | 'client', protocol: string, maxPayload = 64 << 20): WebSocket {
  const ws = new WebSocket(null as unknown as string, undefined, { autoPong: true } as never);
  const inner = ws as unknown as { _isServer: boolean; _protocol: string; _bufferedAmount: number; setSocket(s: Duplex, h: Buffer, o: object): void };
  if (role === 'client') {
    inner._isServer = false;
    inner._bufferedAmount = 0;
  }
  inner._protocol = protocol;
  inner.setSocket(socket, head, { allowSynchronousEvents: true, maxPayload, skipUTF8Validation: false });
  return ws;
}

/** Completes a server's handshake on the socket of an 'upgrade' event, with the protocol chosen ('' for none). */
export function acceptWebSocket(key: string, socket: Duplex, head: Buffer, protocol: string): WebSocket {
  let h = `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${acceptKey(key)}\r\n`;
  if (protocol) h += `Sec-WebSocket-Protocol: ${protocol}\r\n`;
  socket.write(`${h}\r\n`);
  return adoptWebSocket(socket, head, 'server', protocol);
}
