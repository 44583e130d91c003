// The conversion webhook of a CustomResourceDefinition (`spec.conversion.strategy: Webhook`),
// as apiextensions-apiserver's webhookConverter and crConverter do it: the objects not yet
// in the desired version go to the webhook in one ConversionReview (v1 or v1beta1, the first
// of conversionReviewVersions this server speaks), the answer is checked (kind and uid for
// v1, result.status, the count, each object's apiVersion, kind, name, namespace and uid), and
// each converted object keeps the original's metadata except its labels and annotations
// (kube's restoreObjectMeta). Failures are kube's Go errors, as plain 500s.
//
// The HTTPS call is the admission webhooks' client (src/admission/webhook/client.ts: URL or
// Service resolved through EndpointSlices, caBundle, timeouts, Go's wording of failures).
//
// Thread ownership: the front thread; the converters and their clients (socket pools) are
// kept per CRD and conversion config, and dropped when the served CRDs no longer use them.
import { randomUUID } from 'node:crypto';
import { causeMessage, errors, goQuote } from '../../errors.js';
import type { ObjectSource } from '../../admission/plugin.js';
import { ClientConfigError, ResponseStatusError, TransportError, WebhookClient, type ClientConfig } from '../../admission/webhook/client.js';
import { validateAnnotations, validateLabels } from '../validation.js';
import { observeConversion, observeWebhookCall } from './conversion-metrics.js';

/** kube's timeout of a conversion webhook call (the webhook client manager's default). */
const CONVERSION_TIMEOUT_SECONDS = 30;

export interface ConversionSpec {
  strategy?: string;
  webhook?: { clientConfig?: ClientConfig; conversionReviewVersions?: string[] };
}

/** The CRD facts a conversion needs. */
export interface ConverterKey {
  crdName: string;
  group: string;
  kind: string;
  listKind: string;
  conversion?: ConversionSpec;
}

const isObj = (v: unknown): v is Record<string, any> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Go's GroupVersionKind.String() of an apiVersion and kind ("example.com/v1, Kind=Widget"; "/, Kind=" when empty). */
function gvkString(apiVersion: unknown, kind: unknown): string {
  const av = typeof apiVersion === 'string' ? apiVersion : '';
  const i = av.indexOf('/');
  const [g, v] = i < 0 ? ['', av] : [av.slice(0, i), av.slice(i + 1)];
  return `${g}/${v}, Kind=${typeof kind === 'string' ? kind : ''}`;
}

/** Go's GroupVersion.String(): the apiVersion as written, "" for none. */
function gvString(apiVersion: unknown): string {
  return typeof apiVersion === 'string' ? apiVersion : '';
}

let objects: ObjectSource = { get: () => undefined, list: () => [] };

/** The objects a Service in a clientConfig is resolved from (the front thread's caches). */
export function setConversionObjects(o: ObjectSource): void {
  objects = o;
}

let serials = 0;

export class WebhookConverter {
  /** unique per converter: the views a converter made are not another's (src/registry/conversion.ts) */
  readonly serial = ++serials;
  private readonly client: WebhookClient;
  private readonly reviewVersion: 'v1' | 'v1beta1' | undefined;

  constructor(readonly key: ConverterKey) {
    const wh = key.conversion?.webhook ?? {};
    this.client = new WebhookClient(wh.clientConfig ?? {}, objects);
    const versions = Array.isArray(wh.conversionReviewVersions) ? wh.conversionReviewVersions : [];
    this.reviewVersion = versions.find((v): v is 'v1' | 'v1beta1' => v === 'v1' || v === 'v1beta1');
  }

  close(): void {
    this.client.close();
  }

  /**
   * The objects in desiredApiVersion (kube's crConverter.Convert over a list). `list` says
   * whether they are a list's items (whose GVK kube names in its errors) or one object.
   * Objects already in that version are neither sent nor changed. The inputs are not changed.
   */
  async convert(objs: any[], desiredApiVersion: string, list = false): Promise<any[]> {
    const start = performance.now();
    const version = (av: unknown) => (typeof av === 'string' ? av.slice(av.indexOf('/') + 1) : '');
    const from = version(objs[0]?.apiVersion);
    const to = version(desiredApiVersion);
    try {
      const out = await this.convertNow(objs, desiredApiVersion, list);
      observeConversion(this.key.crdName, from, to, (performance.now() - start) / 1000, true);
      return out;
    } catch (e) {
      observeConversion(this.key.crdName, from, to, (performance.now() - start) / 1000, false);
      throw e;
    }
  }

  private async convertNow(objs: any[], desiredApiVersion: string, list: boolean): Promise<any[]> {
    const outer = list ? gvkString(objs[0]?.apiVersion, this.key.listKind) : gvkString(objs[0]?.apiVersion, objs[0]?.kind);
    // kube hands the webhook converter a list with no type of its own for one object: its
    // errors name "/, Kind="; a real list keeps its apiVersion and kind.
    const inner = list ? outer : gvkString('', '');
    const toSend: number[] = [];
    for (let i = 0; i < objs.length; i++) if (objs[i]?.apiVersion !== desiredApiVersion) toSend.push(i);
    if (toSend.length === 0) return objs;
    const fail = (msg: string): never => {
      throw errors.conversionFailed(msg);
    };
    if (!this.reviewVersion) fail(`conversion for ${outer} failed: no supported conversion review versions`);
    const uid = randomUUID();
    const sent = toSend.map((i) => objs[i]);
    const body = JSON.stringify({
      kind: 'ConversionReview',
      apiVersion: `apiextensions.k8s.io/${this.reviewVersion}`,
      request: { uid, desiredAPIVersion: desiredApiVersion, objects: sent },
      response: { uid: '', convertedObjects: null, result: { metadata: {} } },
    });
    let review: any;
    const called = performance.now();
    const callFailed = (why: string): never => {
      observeWebhookCall((performance.now() - called) / 1000, 'conversion_webhook_call_failure');
      return fail(`conversion for ${outer} failed: conversion webhook for ${inner} failed: ${why}`);
    };
    try {
      review = await this.client.post(body, CONVERSION_TIMEOUT_SECONDS);
    } catch (e) {
      if (e instanceof ResponseStatusError) callFailed(e.status.message);
      if (e instanceof ClientConfigError || e instanceof TransportError) callFailed(e.message);
      callFailed(String((e as Error)?.message ?? e));
    }
    const converted = this.checkResponse(review, uid, callFailed);
    observeWebhookCall((performance.now() - called) / 1000);
    if (converted.length !== sent.length) fail(`conversion for ${outer} returned ${converted.length} objects, expected ${sent.length}`);
    const out = objs.slice();
    for (let n = 0; n < toSend.length; n++) {
      const original = sent[n];
      const c = converted[n];
      // (kube counts the object before checking it: its messages give a 1-based index)
      const at = n + 1;
      const bad = (why: string) => fail(`conversion for ${outer} returned invalid converted object at index ${at}: ${why}`);
      if (!isObj(c)) bad('invalid type, expected an object');
      if (gvString(c.apiVersion) !== desiredApiVersion) bad(`invalid groupVersion (expected ${desiredApiVersion}, received ${gvString(c.apiVersion)})`);
      if (c.kind !== original.kind) bad(`invalid kind (expected ${original.kind ?? ''}, received ${c.kind ?? ''})`);
      const why = sameIdentity(original, c);
      if (why) bad(why);
      const restored = restoreObjectMeta(original, c);
      if (typeof restored === 'string') fail(`conversion for ${outer} returned invalid metadata in object at index ${at}: ${restored}`);
      out[toSend[n]] = restored;
    }
    return out;
  }

  /** The converted objects of a review, or the call's failure (kube's getConvertedObjectsFromResponse). */
  private checkResponse(review: any, uid: string, callFailed: (why: string) => never): any[] {
    if (!isObj(review)) callFailed('no response provided');
    if (this.reviewVersion === 'v1') {
      const want = 'apiextensions.k8s.io/v1, Kind=ConversionReview';
      const got = gvkString(review.apiVersion, review.kind);
      if (got !== want) callFailed(`expected webhook response of ${want}, got ${got}`);
    }
    const r = review.response;
    if (!isObj(r)) callFailed('no response provided');
    if (this.reviewVersion === 'v1' && r.uid !== uid) callFailed(`expected response.uid=${goQuote(uid)}, got ${goQuote(typeof r.uid === 'string' ? r.uid : '')}`);
    const result = isObj(r.result) ? r.result : {};
    if (result.status !== 'Success') {
      if (typeof result.message === 'string' && result.message) callFailed(result.message);
      callFailed(`response.result.status was '${typeof result.status === 'string' ? result.status : ''}', not 'Success'`);
    }
    return Array.isArray(r.convertedObjects) ? r.convertedObjects : [];
  }
}

function metaOf(o: any): Record<string, any> {
  return isObj(o?.metadata) ? o.metadata : {};
}

/** kube's validateConvertedObject: only labels and annotations may change. */
function sameIdentity(a: any, b: any): string | undefined {
  const ma = metaOf(a);
  const mb = metaOf(b);
  const s = (v: unknown) => (typeof v === 'string' ? v : '');
  if (s(a.kind) !== s(b.kind)) return `must have the same kind: ${s(a.kind)} != ${s(b.kind)}`;
  if (s(ma.name) !== s(mb.name)) return `must have the same name: ${s(ma.name)} != ${s(mb.name)}`;
  if (s(ma.namespace) !== s(mb.namespace)) return `must have the same namespace: ${s(ma.namespace)} != ${s(mb.namespace)}`;
  if (s(ma.uid) !== s(mb.uid)) return `must have the same UID: ${s(ma.uid)} != ${s(mb.uid)}`;
  return undefined;
}

/** Go's %T of a JSON value, as kube's messages print it. */
function goType(v: unknown): string {
  if (v === null) return '<nil>';
  if (Array.isArray(v)) return '[]interface {}';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'boolean') return 'bool';
  return 'map[string]interface {}';
}

/**
 * kube's restoreObjectMeta: the converted object with the original's metadata, except the
 * labels and annotations the webhook returned (validated when they changed). A string is
 * the error.
 */
function restoreObjectMeta(original: any, converted: any): any | string {
  const had = 'metadata' in original;
  const has = 'metadata' in converted;
  if (!had && !has) return converted;
  if (had && !has) return 'missing metadata in converted object';
  const cm = converted.metadata;
  if (!isObj(cm)) return `invalid metadata of type ${goType(cm)} in converted object`;
  const om = had ? original.metadata : {};
  if (!isObj(om)) return `invalid metadata of type ${goType(om)} in input object`;
  const meta: Record<string, any> = structuredClone(om);
  for (const fld of ['labels', 'annotations'] as const) {
    const v = cm[fld];
    if (v === undefined || v === null) {
      delete meta[fld];
      continue;
    }
    if (!isObj(v)) return `invalid metadata.${fld} of type ${goType(v)} in converted object`;
    const before: Record<string, unknown> = isObj(om[fld]) ? om[fld] : {};
    let changed = Object.keys(before).length !== Object.keys(v).length;
    for (const [k, x] of Object.entries(v)) {
      if (typeof x !== 'string') return `metadata.${fld}[${k}] must be a string, but is ${goType(x)} in converted object`;
      if (before[k] !== x) changed = true;
    }
    if (changed) {
      // (kube's path for annotations reads "metadata.annotation")
      const errs = fld === 'labels' ? validateLabels(v as Record<string, string>, 'metadata.labels') : validateAnnotations(v as Record<string, string>, 'metadata.annotation');
      if (errs.length) {
        const list = [...new Set(errs.map((e) => `${e.field}: ${causeMessage(e)}`))];
        return list.length === 1 ? list[0] : `[${list.join(', ')}]`;
      }
    }
    meta[fld] = v;
  }
  return { ...converted, metadata: meta };
}

// ---- converters by CRD ------------------------------------------------------------------

const converters = new Map<string, WebhookConverter>();

function keyOf(k: ConverterKey): string {
  // (a CustomVersion is passed as it is: only these fields make the key)
  return JSON.stringify([k.crdName, k.group, k.kind, k.listKind, k.conversion]);
}

/** The converter of a CRD whose conversion strategy is Webhook, else undefined. Kept while its config is unchanged. */
export function webhookConverterFor(k: ConverterKey): WebhookConverter | undefined {
  if (k.conversion?.strategy !== 'Webhook') return undefined;
  const key = keyOf(k);
  let c = converters.get(key);
  if (!c) converters.set(key, (c = new WebhookConverter(k)));
  return c;
}

/** Closes the converters the served CRDs no longer use (called when the served set changes). */
export function retainConverters(keep: ConverterKey[]): void {
  const live = new Set(keep.map(keyOf));
  for (const [k, c] of converters) {
    if (live.has(k)) continue;
    c.close();
    converters.delete(k);
  }
}
