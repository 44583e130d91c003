import { describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import { dialSpdy, errorStreamStatus, exitCodeStatus, internalStatus, offersStreamCloseProtocol } from './stream-translator.js';
import { offersTunnelingProtocol, tunneledProtocols } from './stream-tunnel.js';

const v5 = 'v5.channel.k8s.io';

describe('the error stream read as client-go reads it, made the translator\'s Status', () => {
  it('empty or Success: Success', () => {
    expect(errorStreamStatus(v5, Buffer.alloc(0))).toEqual({ metadata: {}, status: 'Success' });
    expect(errorStreamStatus('v4.channel.k8s.io', Buffer.from('{"metadata":{},"status":"Success"}'))).toEqual({ metadata: {}, status: 'Success' });
  });

  it('a non-zero exit code: codeExitToStatusError\'s Status', () => {
    const node = { metadata: {}, status: 'Failure', message: 'command terminated with non-zero exit code: whatever', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '3' }] } };
    expect(errorStreamStatus(v5, Buffer.from(JSON.stringify(node)))).toEqual(exitCodeStatus(3));
    expect(JSON.stringify(exitCodeStatus(3))).toBe(
      '{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: command terminated with exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}',
    );
  });

  it('protocol errors and other failures: an InternalError', () => {
    expect(errorStreamStatus(v5, Buffer.from('{"status":"Failure","reason":"NonZeroExitCode"}'))).toEqual(internalStatus('error stream protocol error: details must be set'));
    expect(errorStreamStatus(v5, Buffer.from('{"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"300"}]}}'))).toEqual(internalStatus('error stream protocol error: invalid exit code value "300"'));
    expect(errorStreamStatus(v5, Buffer.from('{"status":"Failure","message":"boom","reason":"InternalError"}'))).toEqual(internalStatus('boom'));
    expect(errorStreamStatus(v5, Buffer.from('{"status":"Weird"}'))).toEqual(internalStatus('error stream protocol error: unknown error'));
    expect(errorStreamStatus('v2.channel.k8s.io', Buffer.from('it broke'))).toEqual(internalStatus('error executing remote command: it broke'));
    expect(JSON.stringify(internalStatus('x'))).toBe('{"metadata":{},"status":"Failure","message":"Internal error occurred: x","reason":"InternalError","details":{"causes":[{"message":"x"}]},"code":500}');
  });
});

describe('which WebSocket requests are translated', () => {
  it('exec and attach offering v5 (IsWebSocketRequestWithStreamCloseProtocol)', () => {
    expect(offersStreamCloseProtocol({ upgrade: 'websocket', 'sec-websocket-protocol': 'v5.channel.k8s.io' })).toBe(true);
    expect(offersStreamCloseProtocol({ upgrade: 'WebSocket', 'sec-websocket-protocol': 'v4.channel.k8s.io, v5.channel.k8s.io' })).toBe(true);
    expect(offersStreamCloseProtocol({ upgrade: 'websocket', 'sec-websocket-protocol': 'v4.channel.k8s.io' })).toBe(false);
    expect(offersStreamCloseProtocol({ upgrade: 'SPDY/3.1', 'x-stream-protocol-version': 'v5.channel.k8s.io' })).toBe(false);
  });

  it('port-forward tunneling SPDY (IsWebSocketRequestWithTunnelingProtocol), the prefix stripped for the node', () => {
    const h = { upgrade: 'websocket', 'sec-websocket-protocol': 'SPDY/3.1+portforward.k8s.io, portforward.k8s.io' };
    expect(offersTunnelingProtocol(h)).toBe(true);
    expect(tunneledProtocols(h)).toEqual(['portforward.k8s.io']);
    expect(offersTunnelingProtocol({ upgrade: 'websocket', 'sec-websocket-protocol': 'portforward.k8s.io' })).toBe(false);
  });
});

describe('dialSpdy: the node\'s answer to the SPDY upgrade, in client-go\'s words', () => {
  const serve = async (answer: (req: import('node:http').IncomingMessage, socket: import('node:stream').Duplex) => void) => {
    const srv = createServer();
    srv.on('upgrade', (req, socket) => answer(req, socket));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const port = (srv.address() as import('node:net').AddressInfo).port;
    return { srv, target: { url: new URL(`http://127.0.0.1:${port}/exec/ns/p/c?command=true&output=1`), tls: {} } };
  };

  it('a text refusal: "unable to upgrade connection: <text>"; a Status refusal: that Status', async () => {
    const text = await serve((_req, socket) => socket.end('HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 21\r\n\r\ncontainer not found\r\n'));
    await expect(dialSpdy(text.target, ['v5.channel.k8s.io'])).rejects.toThrow('unable to upgrade connection: container not found');
    text.srv.close();
    const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'nope', reason: 'Forbidden', code: 403 });
    const st = await serve((_req, socket) => socket.end(`HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`));
    await expect(dialSpdy(st.target, ['v5.channel.k8s.io'])).rejects.toMatchObject({ status: { message: 'nope', reason: 'Forbidden' } });
    st.srv.close();
  });

  it('asks for SPDY/3.1 with a POST and every protocol; a switch gives the node\'s choice', async () => {
    let seen: Record<string, unknown> = {};
    const ok = await serve((req, socket) => {
      seen = { method: req.method, upgrade: req.headers.upgrade, versions: req.headers['x-stream-protocol-version'] };
      socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n');
    });
    const up = await dialSpdy(ok.target, ['v5.channel.k8s.io', 'v4.channel.k8s.io']);
    expect(up.protocol).toBe('v4.channel.k8s.io');
    expect(seen).toEqual({ method: 'POST', upgrade: 'SPDY/3.1', versions: 'v5.channel.k8s.io, v4.channel.k8s.io' });
    up.socket.destroy();
    ok.srv.close();
  });

  it('a node that cannot be reached: "error sending request: Post ..."', async () => {
    const { srv, target } = await serve(() => {});
    await new Promise((r) => srv.close(r));
    await expect(dialSpdy(target, ['v5.channel.k8s.io'])).rejects.toThrow(`error sending request: Post "${target.url.href}": dial tcp ${target.url.host}: connect: connection refused`);
  });
});
