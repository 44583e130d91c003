import { describe, expect, it } from 'vitest';
import { errorStreamStatus, exitCodeStatus, internalStatus, offersStreamCloseProtocol } from './stream-translator.js';
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
