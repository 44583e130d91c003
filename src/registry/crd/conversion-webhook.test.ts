import { describe, it, expect } from 'vitest';
import { WebhookConverter } from './conversion-webhook.js';

const key = { crdName: 'widgets.example.com', group: 'example.com', kind: 'Widget', listKind: 'WidgetList', conversion: { strategy: 'Webhook', webhook: { clientConfig: { url: 'https://127.0.0.1:1/c' }, conversionReviewVersions: ['v1'] } } };
const obj = (name: string, extra: any = {}) => ({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name, namespace: 'ns', uid: `u-${name}`, generation: 1, labels: { a: '1' } }, spec: { color: 'red' }, ...extra });

/** A converter whose webhook answers with respond(request, review). */
function converter(respond: (req: any, review: any) => any): WebhookConverter {
  const c = new WebhookConverter(key);
  (c as any).client.close();
  (c as any).client = { post: async (body: string) => respond(JSON.parse(body).request, JSON.parse(body)), close() {} };
  return c;
}
const ok = (req: any, objects: any[]) => ({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', response: { uid: req.uid, result: { status: 'Success' }, convertedObjects: objects } });
const to2 = (o: any) => ({ ...structuredClone(o), apiVersion: 'example.com/v2' });

describe('WebhookConverter', () => {
  it('sends only the objects not in the desired version, and keeps the server metadata', async () => {
    let sent: any[] = [];
    const c = converter((req) => {
      sent = req.objects;
      return ok(req, req.objects.map((o: any) => ({ ...to2(o), metadata: { ...o.metadata, generation: 7, labels: { b: '2' }, annotations: { x: 'y' } } })));
    });
    const already = { ...obj('b'), apiVersion: 'example.com/v2' };
    const out = await c.convert([obj('a'), already], 'example.com/v2', true);
    expect(sent.map((o) => o.metadata.name)).toEqual(['a']);
    expect(out[1]).toBe(already);
    expect(out[0].apiVersion).toBe('example.com/v2');
    expect(out[0].metadata).toEqual({ name: 'a', namespace: 'ns', uid: 'u-a', generation: 1, labels: { b: '2' }, annotations: { x: 'y' } });
  });

  it('checks the answer as kube does, in its words', async () => {
    const fails = async (respond: (req: any) => any, list = false) => {
      try {
        await converter(respond).convert([obj('a')], 'example.com/v2', list);
      } catch (e: any) {
        expect(e.code).toBe(500);
        return e.message;
      }
      throw new Error('no failure');
    };
    const single = 'conversion for example.com/v1, Kind=Widget failed: conversion webhook for /, Kind= failed: ';
    expect(await fails((req) => ({ ...ok(req, []), response: { uid: 'other', result: { status: 'Success' } } }))).toMatch(/^conversion for example\.com\/v1, Kind=Widget failed: conversion webhook for \/, Kind= failed: expected response\.uid="[0-9a-f-]{36}", got "other"$/);
    expect(await fails((req) => ({ ...ok(req, []), response: { uid: req.uid, result: { status: 'Failure', message: 'nope' } } }))).toBe(`${single}nope`);
    expect(await fails((req) => ({ ...ok(req, []), response: { uid: req.uid, result: { status: 'Failure' } } }))).toBe(`${single}response.result.status was 'Failure', not 'Success'`);
    expect(await fails((req) => ({ ...ok(req, []), kind: 'AdmissionReview' }))).toBe(`${single}expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1, Kind=AdmissionReview`);
    expect(await fails((req) => ok(req, []))).toBe('conversion for example.com/v1, Kind=Widget returned 0 objects, expected 1');
    expect(await fails((req) => ok(req, [obj('a')]))).toBe('conversion for example.com/v1, Kind=Widget returned invalid converted object at index 1: invalid groupVersion (expected example.com/v2, received example.com/v1)');
    expect(await fails((req) => ok(req, [{ ...to2(obj('a')), kind: 'Gadget' }]))).toBe('conversion for example.com/v1, Kind=Widget returned invalid converted object at index 1: invalid kind (expected Widget, received Gadget)');
    expect(await fails((req) => ok(req, [{ ...to2(obj('a')), metadata: { ...obj('a').metadata, uid: 'x' } }]))).toBe('conversion for example.com/v1, Kind=Widget returned invalid converted object at index 1: must have the same UID: u-a != x');
    expect(await fails((req) => ok(req, [{ ...to2(obj('a')), metadata: { ...obj('a').metadata, labels: { 'bad key': 'v' } } }]))).toMatch(
      /^conversion for example\.com\/v1, Kind=Widget returned invalid metadata in object at index 1: metadata\.labels: Invalid value: "bad key": /,
    );
    expect(await fails((req) => ok(req, [{ ...to2(obj('a')), metadata: { ...obj('a').metadata, annotations: { a: 1 } } }]))).toBe(
      'conversion for example.com/v1, Kind=Widget returned invalid metadata in object at index 1: metadata.annotations[a] must be a string, but is float64 in converted object',
    );
    // a list names the list's kind at both levels
    expect(await fails((req) => ({ ...ok(req, []), response: { uid: req.uid, result: { status: 'Failure', message: 'nope' } } }), true)).toBe(
      'conversion for example.com/v1, Kind=WidgetList failed: conversion webhook for example.com/v1, Kind=WidgetList failed: nope',
    );
  });
});
