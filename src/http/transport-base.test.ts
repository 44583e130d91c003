import { describe, it, expect } from 'vitest';
import { BodyReader, RequestBase, SinkBase, type BodySource } from './transport-base.js';
import { BodyBudget } from './body-budget.js';
import type { HeaderList } from './types.js';
import { StatusError } from '../errors.js';

class Req extends RequestBase {
  remoteAddress = '';
}

class Sink extends SinkBase {
  sent: number[] = [];
  sendParts(status: number, _h: HeaderList, _p: Uint8Array[]): void {
    this.status = status;
    this.sent.push(status);
    this.finish();
  }
  gone(): void {
    this.aborting();
  }
  unread(): boolean {
    return this.bodyUnread();
  }
}

class Source implements BodySource {
  flows: boolean[] = [];
  flow(on: boolean): void {
    this.flows.push(on);
  }
}

function setup(declared: number, opts: { max?: number; budget?: number } = {}) {
  const req = new Req('POST', '/x', '', {});
  const sink = new Sink();
  const source = new Source();
  const budget = new BodyBudget(opts.budget ?? 1 << 20);
  const reader = new BodyReader(req, sink, { maxBytes: opts.max ?? 1000, budget }, declared, source);
  const feed = (s: string) => {
    if (reader.accept(s.length)) reader.push(Buffer.from(s));
  };
  return { req, sink, source, budget, reader, feed };
}

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return e as StatusError;
  }
  throw new Error('no refusal');
};

describe('BodyReader', () => {
  it('reads a declared body once asked, charging all of it, and gives the charge back at the end', async () => {
    const { req, sink, source, budget, reader, feed } = setup(10);
    expect(req.body).toBeNull();
    const p = req.readBody();
    expect(p).toBeInstanceOf(Promise);
    expect(budget.used).toBe(10);
    expect(source.flows).toEqual([true]);
    feed('hello');
    feed('world');
    reader.end();
    expect(await p).toBe(false);
    expect(req.body!.toString()).toBe('helloworld');
    expect(sink.unread()).toBe(false);
    sink.send(201, [], '{}');
    expect(budget.used).toBe(0);
  });

  it('keeps what came before it was asked, and goes on synchronously when all of it came', () => {
    const { req, budget, reader, feed } = setup(5);
    feed('hello');
    reader.end();
    expect(budget.used).toBe(5);
    expect(req.readBody()).toBeUndefined();
    expect(req.body!.toString()).toBe('hello');
    expect(budget.used).toBe(5);
  });

  it('stops the flow past 64 KiB kept before it was asked, once the budget is spent', () => {
    const { source, feed } = setup(200_000, { max: 1 << 20, budget: 100_000 });
    feed('x'.repeat(60_000));
    expect(source.flows).toEqual([]);
    // past 64 KiB within the budget: the flow goes on (pausing a uWS socket costs connections)
    feed('x'.repeat(10_000));
    expect(source.flows).toEqual([]);
    feed('x'.repeat(40_000));
    expect(source.flows).toEqual([false]);
  });

  it('drops what comes once the request was answered unread, and the answer says so', () => {
    const { sink, budget, reader, feed } = setup(1000);
    expect(sink.unread()).toBe(true);
    sink.send(403, [], '{}');
    expect(reader.accept(100)).toBe(false);
    feed('more');
    expect(budget.used).toBe(0);
  });

  it('refuses a declared length past the limit with 413 when asked, not before', () => {
    const { req, budget } = setup(5000, { max: 1000 });
    const e = refusal(() => req.readBody());
    expect(e.code).toBe(413);
    expect(budget.used).toBe(0);
  });

  it('refuses a body the budget has no room for with 429 and Retry-After', () => {
    const budget = new BodyBudget(1000);
    const reader = (req: Req) => new BodyReader(req, new Sink(), { maxBytes: 1000, budget }, 600, new Source());
    const first = new Req('POST', '/', '', {});
    const second = new Req('POST', '/', '', {});
    reader(first);
    reader(second);
    void first.readBody();
    const e = refusal(() => second.readBody());
    expect(e.code).toBe(429);
    expect(e.reason).toBe('TooManyRequests');
    expect(e.headers).toEqual({ 'Retry-After': '1' });
    expect(budget.used).toBe(600);
  });

  it('charges a body of unknown length as it comes, and rejects it past the limit with 413', async () => {
    const { req, budget, feed } = setup(-1, { max: 10 });
    const p = req.readBody()!;
    feed('hello');
    expect(budget.used).toBe(5);
    feed('world!');
    await expect(p).rejects.toMatchObject({ code: 413 });
  });

  it('settles as answered when the client goes away while it reads', async () => {
    const { req, sink, budget } = setup(10);
    const p = req.readBody()!;
    sink.gone();
    expect(await p).toBe(true);
    expect(budget.used).toBe(0);
  });
});
