import { describe, it, expect, afterAll } from 'vitest';
import net from 'node:net';
import { parseResponse } from './https-pool.js';
import { WebhookClient } from './client.js';

describe('parseResponse', () => {
  it('Content-Length, chunked, close-delimited, 100 Continue, partial input', () => {
    const cl = parseResponse(Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{"a":1}'));
    expect(cl).toMatchObject({ status: 200 });
    expect((cl as any).body.toString()).toBe('{"a":1}');
    expect((cl as any).headers.get('content-type')).toBe('application/json');
    expect(parseResponse(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{"a"'))).toBeUndefined();
    const ch = parseResponse(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"a\r\n4\r\n":1}\r\n0\r\n\r\n'));
    expect((ch as any).body.toString()).toBe('{"a":1}');
    expect(parseResponse(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"a\r\n'))).toBeUndefined();
    expect(parseResponse(Buffer.from('HTTP/1.0 200 OK\r\n\r\n{"a":1}'))).toBeUndefined();
    const eof = parseResponse(Buffer.from('HTTP/1.0 200 OK\r\n\r\n{"a":1}'), true);
    expect((eof as any).body.toString()).toBe('{"a":1}');
    const cont = parseResponse(Buffer.from('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}'));
    expect((cont as any).status).toBe(201);
    expect(parseResponse(Buffer.from('garbage\r\n\r\n'))).toBeInstanceOf(Error);
  });
});

describe('WebhookClient errors in Go words', () => {
  const servers: net.Server[] = [];
  afterAll(() => servers.forEach((s) => s.close()));

  it('connection refused, and a server that never answers (the hook timeout)', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const c = new WebhookClient({ url: `https://127.0.0.1:${port}/hook` }, { get: () => undefined, list: () => [] });
    await expect(c.post('{}', 10)).rejects.toThrow(`Post "https://127.0.0.1:${port}/hook?timeout=10s": dial tcp 127.0.0.1:${port}: connect: connection refused`);
    c.close();
    // a server that hangs: the hook's timeout
    const hang = net.createServer(() => {});
    servers.push(hang);
    await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
    const hp = (hang.address() as net.AddressInfo).port;
    const h = new WebhookClient({ url: `https://127.0.0.1:${hp}/` }, { get: () => undefined, list: () => [] });
    await expect(h.post('{}', 1)).rejects.toThrow(`Post "https://127.0.0.1:${hp}/?timeout=1s": context deadline exceeded`);
    h.close();
  });

  it('a caBundle that is not PEM fails the call, not the server', async () => {
    const c = new WebhookClient({ url: 'https://127.0.0.1:1/', caBundle: Buffer.from('not a certificate').toString('base64') }, { get: () => undefined, list: () => [] });
    await expect(c.post('{}', 10)).rejects.toThrow('unable to load root certificates: unable to parse bytes as PEM block');
  });

  it('a Service without endpoints, and a missing Service', async () => {
    const objects = {
      get: (gr: string, ns: string, name: string) => (gr === 'services' && name === 'svc' ? { metadata: { name }, spec: { ports: [{ port: 443 }] } } : undefined),
      list: () => [],
    };
    const c = new WebhookClient({ service: { namespace: 'ns', name: 'svc', path: '/v' } }, objects);
    await expect(c.post('{}', 10)).rejects.toThrow('Post "https://svc.ns.svc:443/v?timeout=10s": no endpoints available for service "svc"');
    const m = new WebhookClient({ service: { namespace: 'ns', name: 'gone' } }, objects);
    await expect(m.post('{}', 10)).rejects.toThrow('Post "https://gone.ns.svc:443/?timeout=10s": service "gone" not found');
    const p = new WebhookClient({ service: { namespace: 'ns', name: 'svc', port: 8443 } }, objects);
    await expect(p.post('{}', 10)).rejects.toThrow('no service port 8443 found for service "svc"');
  });
});
