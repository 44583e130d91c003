// Conversion between the API versions of one resource (kube-apiserver's scheme
// conversions, as its storage codec applies them).
//
// kube keeps one storage version per group-resource (src/api/catalog-data.ts
// storageVersion/storageResource, from scripts/gen-catalog.mjs) and converts on every
// read and write. Here the store works on objects in the request's version (defaulting,
// validation, managed fields, patches: as kube's handlers see the request's version) and
// converts at its two edges: toStorage right before a commit, fromStorage for whatever it
// reads out (src/registry/store.ts). A converted read is a "view" of a cache entry,
// memoized per entry and apiVersion, so every reader and watcher of that version shares
// one conversion and, through the view's own memo (src/codec/representation.ts), one
// encoding per representation.
//
// Most versions of a resource differ in apiVersion only; the hand-written conversions
// are the ones whose fields differ:
//   autoscaling/v1 <-> v2 HorizontalPodAutoscaler (pkg/apis/autoscaling/v1/conversion.go)
//   core/v1 <-> events.k8s.io/v1 Event (pkg/apis/events/v1/conversion.go)
//   resource.k8s.io v1beta2 and v1alpha3 <-> the stored v1beta1 (pkg/apis/resource/*):
//     v1beta2 nests a request's one-device fields under `exactly` and has no
//     ResourceSlice device `basic` wrapper; v1alpha3's device capacities are bare quantities
import type { ResourceInfo } from '../api/catalog-types.js';
import type { CacheEntry } from '../../workers/watch/watch-cache.js';
import { orderedObject } from '../codec/json.js';
import { setOwn } from './own-keys.js';
import { webhookConverterFor, type WebhookConverter } from './crd/conversion-webhook.js';

export interface Conversion {
  /** the request's apiVersion, and the storage's */
  apiVersion: string;
  storageApiVersion: string;
  /** a new object in the storage version; the input is not changed */
  toStorage(obj: any): any;
  /** a new object in the request's version; the input (often a shared cache parse) is not changed */
  fromStorage(obj: any): any;
  /**
   * Set for a CRD whose conversion strategy is Webhook: every conversion is a call, so the
   * store converts with the async helpers below (toStorageAsync, readyViews, ...) and the
   * sync toStorage/fromStorage above only rewrite apiVersion (what admission's Equivalent
   * matching uses).
   */
  webhook?: WebhookConverter;
}

type Convert = (obj: any, apiVersion: string) => any;

function apiVersionOfInfo(info: ResourceInfo): string {
  return info.group ? `${info.group}/${info.version}` : info.version;
}

/** Field-identical versions: only apiVersion changes. */
const rewrite: Convert = (obj, apiVersion) => ({ ...obj, apiVersion });

/** Hand-written conversions, by "from|to|Kind". */
const HAND: Record<string, Convert> = {};

/** The conversion of a served version to its storage version, or undefined when it is the storage version. */
export function conversionOf(info: ResourceInfo): Conversion | undefined {
  if (!info.storageVersion) return undefined;
  const apiVersion = apiVersionOfInfo(info);
  const storageApiVersion = info.storageVersion;
  const down = HAND[`${storageApiVersion}|${apiVersion}|${info.kind}`] ?? rewrite;
  const up = HAND[`${apiVersion}|${storageApiVersion}|${info.kind}`] ?? rewrite;
  const webhook = info.custom?.conversion ? webhookConverterFor(info.custom) : undefined;
  return {
    apiVersion,
    storageApiVersion,
    ...(webhook ? { webhook } : {}),
    toStorage: (obj) => orderedObject(up(obj, storageApiVersion)),
    fromStorage: (obj) => {
      // Bytes written before storage versions were kept (in another served version) are
      // first brought to the storage version, as kube's storage decodes any version it knows.
      if (obj?.apiVersion !== storageApiVersion && typeof obj?.apiVersion === 'string') {
        if (obj.apiVersion === apiVersion) return obj;
        const legacy = HAND[`${obj.apiVersion}|${storageApiVersion}|${info.kind}`];
        if (legacy) obj = legacy(obj, storageApiVersion);
      }
      return orderedObject(down(obj, apiVersion));
    },
  };
}

// ---- views of stored objects ------------------------------------------------------------

const views = new WeakMap<object, Map<string, CacheEntry>>();
/** webhook conversions under way, by entry and apiVersion */
const pendingViews = new WeakMap<object, Map<string, Promise<void>>>();

function parse(e: { json: Buffer; obj?: any }): any {
  if (e.obj === undefined) e.obj = JSON.parse(e.json.toString('utf8'));
  return e.obj;
}

/**
 * What a view is memoized under: the apiVersion, and for a webhook the converter too, so that
 * a CRD whose conversion changed converts its objects afresh.
 */
function viewKey(conv: Conversion): string {
  return conv.webhook ? `${conv.apiVersion}#${conv.webhook.serial}` : conv.apiVersion;
}

/** The stored object in the request's version, memoized on the entry (shared by every reader of that version). */
export function viewOf(conv: Conversion, e: CacheEntry): CacheEntry {
  let m = views.get(e);
  if (!m) views.set(e, (m = new Map()));
  let v = m.get(viewKey(conv));
  if (!v) {
    // (a webhook's views are made by readyViews first: converting here would skip the webhook)
    if (conv.webhook) throw new Error(`internal error: ${conv.apiVersion} view of ${e.key} read before its conversion webhook was called`);
    const obj = conv.fromStorage(parse(e));
    v = { key: e.key, ns: e.ns, name: e.name, rv: e.rv, json: Buffer.from(JSON.stringify(obj)), obj };
    m.set(viewKey(conv), v);
  }
  return v;
}

/**
 * Makes the request version's views of these entries (a webhook conversion: one call for
 * all of those not converted yet), so that viewOf then finds them. `list`: they are a
 * list's items (kube's errors then name the list's kind). Entries some other
 * reader is converting already are waited for, not sent again.
 */
export async function readyViews(conv: Conversion, entries: CacheEntry[], list = false): Promise<void> {
  const wh = conv.webhook;
  if (!wh) return;
  const todo: CacheEntry[] = [];
  const waits: Promise<void>[] = [];
  for (const e of entries) {
    if (views.get(e)?.has(viewKey(conv))) continue;
    const p = pendingViews.get(e)?.get(viewKey(conv));
    if (p) waits.push(p);
    else if (!todo.includes(e)) todo.push(e);
  }
  if (todo.length) {
    const call = (async () => {
      const objs = await wh.convert(
        todo.map((e) => parse(e)),
        conv.apiVersion,
        list,
      );
      for (let i = 0; i < todo.length; i++) {
        const e = todo[i];
        const obj = orderedObject(objs[i]);
        let m = views.get(e);
        if (!m) views.set(e, (m = new Map()));
        m.set(viewKey(conv), { key: e.key, ns: e.ns, name: e.name, rv: e.rv, json: Buffer.from(JSON.stringify(obj)), obj });
      }
    })();
    for (const e of todo) {
      let m = pendingViews.get(e);
      if (!m) pendingViews.set(e, (m = new Map()));
      m.set(viewKey(conv), call);
    }
    waits.push(
      call.finally(() => {
        for (const e of todo) pendingViews.get(e)?.delete(viewKey(conv));
      }),
    );
  }
  await Promise.all(waits);
}

/** Whether viewOf has this entry's view at hand (always, but for a webhook conversion not yet made). */
export function hasView(conv: Conversion, e: CacheEntry): boolean {
  return !conv.webhook || !!views.get(e)?.has(viewKey(conv));
}

/** An object of the request's version in the storage version (through the webhook when the CRD has one). */
export async function toStorageAsync(conv: Conversion, obj: any): Promise<any> {
  if (!conv.webhook) return conv.toStorage(obj);
  const [out] = await conv.webhook.convert([obj], conv.storageApiVersion);
  return orderedObject(out);
}

/** Stored JSON (a write's result) in the request's version, through the webhook when the CRD has one. */
export async function convertedJsonAsync(conv: Conversion, json: Buffer): Promise<Buffer> {
  if (!conv.webhook) return convertedJson(conv, json);
  const [out] = await conv.webhook.convert([JSON.parse(json.toString('utf8'))], conv.apiVersion);
  return Buffer.from(JSON.stringify(orderedObject(out)));
}

/** Stored JSON (a write's result) in the request's version. */
export function convertedJson(conv: Conversion, json: Buffer): Buffer {
  return Buffer.from(JSON.stringify(conv.fromStorage(JSON.parse(json.toString('utf8')))));
}

// ---- shared helpers ---------------------------------------------------------------------

const isObj = (v: unknown): v is Record<string, any> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Copies the listed keys that are set, in that order (Go struct order), skipping undefined. */
function pick(src: Record<string, any>, keys: string[], out: Record<string, any> = {}): Record<string, any> {
  for (const k of keys) if (src[k] !== undefined) out[k] = src[k];
  return out;
}

function withAnnotations(meta: Record<string, any> | undefined, edit: (a: Record<string, string>) => void): Record<string, any> {
  const m = { ...(meta ?? {}) };
  const a: Record<string, string> = { ...(m.annotations ?? {}) };
  edit(a);
  if (Object.keys(a).length) m.annotations = a;
  else delete m.annotations;
  return m;
}

// ---- autoscaling v1 <-> v2 HorizontalPodAutoscaler ---------------------------------------

/** The annotations through which autoscaling/v1 carries what only v2 has (kube's autoscaling annotations). */
export const HPA_METRICS = 'autoscaling.alpha.kubernetes.io/metrics';
export const HPA_CURRENT_METRICS = 'autoscaling.alpha.kubernetes.io/current-metrics';
export const HPA_CONDITIONS = 'autoscaling.alpha.kubernetes.io/conditions';
export const HPA_BEHAVIOR = 'autoscaling.alpha.kubernetes.io/behavior';
const HPA_ROUND_TRIP = [HPA_METRICS, HPA_BEHAVIOR, HPA_CURRENT_METRICS, HPA_CONDITIONS];
const DEFAULT_CPU_UTILIZATION = 80;
const ZERO = '0';

/** v2 MetricSpec -> the v1 (v2beta1-shaped) MetricSpec the metrics annotation holds. */
function metricSpecToV1(m: any): any {
  const out: any = { type: m.type };
  const t = m.object;
  if (isObj(t)) {
    const tgt = t.target ?? {};
    out.object = pick({ target: pick(t.describedObject ?? {}, ['kind', 'name', 'apiVersion']), metricName: t.metric?.name ?? '', targetValue: tgt.value ?? ZERO, selector: t.metric?.selector, averageValue: tgt.averageValue }, ['target', 'metricName', 'targetValue', 'selector', 'averageValue']);
  }
  if (isObj(m.pods)) out.pods = pick({ metricName: m.pods.metric?.name ?? '', targetAverageValue: m.pods.target?.averageValue ?? ZERO, selector: m.pods.metric?.selector }, ['metricName', 'targetAverageValue', 'selector']);
  if (isObj(m.resource)) out.resource = pick({ name: m.resource.name, targetAverageUtilization: m.resource.target?.averageUtilization, targetAverageValue: m.resource.target?.averageValue }, ['name', 'targetAverageUtilization', 'targetAverageValue']);
  if (isObj(m.containerResource)) {
    const c = m.containerResource;
    out.containerResource = pick({ name: c.name, targetAverageUtilization: c.target?.averageUtilization, targetAverageValue: c.target?.averageValue, container: c.container ?? '' }, ['name', 'targetAverageUtilization', 'targetAverageValue', 'container']);
  }
  if (isObj(m.external)) {
    const x = m.external;
    out.external = pick({ metricName: x.metric?.name ?? '', metricSelector: x.metric?.selector, targetValue: x.target?.value, targetAverageValue: x.target?.averageValue }, ['metricName', 'metricSelector', 'targetValue', 'targetAverageValue']);
  }
  return out;
}

function identifier(name: unknown, selector: unknown): any {
  return pick({ name: name ?? '', selector }, ['name', 'selector']);
}

/** The metrics annotation's v1 MetricSpec -> v2. */
function metricSpecFromV1(m: any): any {
  const out: any = { type: m.type };
  if (isObj(m.object)) {
    const o = m.object;
    out.object = {
      describedObject: pick(o.target ?? {}, ['kind', 'name', 'apiVersion']),
      target: pick({ type: o.averageValue === undefined ? 'Value' : 'AverageValue', value: o.targetValue ?? ZERO, averageValue: o.averageValue }, ['type', 'value', 'averageValue']),
      metric: identifier(o.metricName, o.selector),
    };
  }
  if (isObj(m.pods)) out.pods = { metric: identifier(m.pods.metricName, m.pods.selector), target: { type: 'AverageValue', averageValue: m.pods.targetAverageValue ?? ZERO } };
  const resourceTarget = (r: any) => pick({ type: r.targetAverageUtilization === undefined ? 'AverageValue' : 'Utilization', averageValue: r.targetAverageValue, averageUtilization: r.targetAverageUtilization }, ['type', 'averageValue', 'averageUtilization']);
  if (isObj(m.resource)) out.resource = { name: m.resource.name, target: resourceTarget(m.resource) };
  if (isObj(m.containerResource)) out.containerResource = { name: m.containerResource.name, target: resourceTarget(m.containerResource), container: m.containerResource.container ?? '' };
  if (isObj(m.external)) {
    const x = m.external;
    out.external = { metric: identifier(x.metricName, x.metricSelector), target: pick({ type: x.targetValue === undefined ? 'AverageValue' : 'Value', value: x.targetValue, averageValue: x.targetAverageValue }, ['type', 'value', 'averageValue']) };
  }
  return out;
}

function metricStatusToV1(m: any): any {
  const out: any = { type: m.type };
  if (isObj(m.object)) {
    const o = m.object;
    out.object = pick({ target: pick(o.describedObject ?? {}, ['kind', 'name', 'apiVersion']), metricName: o.metric?.name ?? '', currentValue: o.current?.value ?? ZERO, selector: o.metric?.selector, averageValue: o.current?.averageValue }, ['target', 'metricName', 'currentValue', 'selector', 'averageValue']);
  }
  if (isObj(m.pods)) out.pods = pick({ metricName: m.pods.metric?.name ?? '', currentAverageValue: m.pods.current?.averageValue ?? ZERO, selector: m.pods.metric?.selector }, ['metricName', 'currentAverageValue', 'selector']);
  if (isObj(m.resource)) out.resource = pick({ name: m.resource.name, currentAverageUtilization: m.resource.current?.averageUtilization, currentAverageValue: m.resource.current?.averageValue ?? ZERO }, ['name', 'currentAverageUtilization', 'currentAverageValue']);
  if (isObj(m.containerResource)) {
    const c = m.containerResource;
    out.containerResource = pick({ name: c.name, currentAverageUtilization: c.current?.averageUtilization, currentAverageValue: c.current?.averageValue ?? ZERO, container: c.container ?? '' }, ['name', 'currentAverageUtilization', 'currentAverageValue', 'container']);
  }
  if (isObj(m.external)) {
    const x = m.external;
    out.external = pick({ metricName: x.metric?.name ?? '', metricSelector: x.metric?.selector, currentValue: x.current?.value ?? ZERO, currentAverageValue: x.current?.averageValue }, ['metricName', 'metricSelector', 'currentValue', 'currentAverageValue']);
  }
  return out;
}

function metricStatusFromV1(m: any): any {
  const out: any = { type: m.type };
  if (isObj(m.object)) {
    const o = m.object;
    out.object = { metric: identifier(o.metricName, o.selector), current: pick({ value: o.currentValue ?? ZERO, averageValue: o.averageValue }, ['value', 'averageValue']), describedObject: pick(o.target ?? {}, ['kind', 'name', 'apiVersion']) };
  }
  if (isObj(m.pods)) out.pods = { metric: identifier(m.pods.metricName, m.pods.selector), current: { averageValue: m.pods.currentAverageValue ?? ZERO } };
  const current = (r: any) => pick({ averageValue: r.currentAverageValue ?? ZERO, averageUtilization: r.currentAverageUtilization }, ['averageValue', 'averageUtilization']);
  if (isObj(m.resource)) out.resource = { name: m.resource.name, current: current(m.resource) };
  if (isObj(m.containerResource)) out.containerResource = { name: m.containerResource.name, current: current(m.containerResource), container: m.containerResource.container ?? '' };
  if (isObj(m.external)) {
    const x = m.external;
    out.external = { metric: identifier(x.metricName, x.metricSelector), current: pick({ value: x.currentValue ?? ZERO, averageValue: x.currentAverageValue }, ['value', 'averageValue']) };
  }
  return out;
}

function conditionOf(c: any): any {
  return pick({ ...c, lastTransitionTime: c?.lastTransitionTime ?? null }, ['type', 'status', 'lastTransitionTime', 'reason', 'message']);
}

/**
 * spec.behavior in the behavior annotation. kube marshals its internal type there, which has
 * no JSON tags: Go's field names (ScaleUp, StabilizationWindowSeconds, ...), read back
 * case-insensitively as encoding/json does.
 */
function behaviorToAnnotation(b: any): string {
  const rules = (r: any) =>
    isObj(r)
      ? {
          StabilizationWindowSeconds: r.stabilizationWindowSeconds ?? null,
          SelectPolicy: r.selectPolicy ?? null,
          Policies: Array.isArray(r.policies) ? r.policies.map((p: any) => ({ Type: p?.type ?? '', Value: p?.value ?? 0, PeriodSeconds: p?.periodSeconds ?? 0 })) : null,
        }
      : null;
  return JSON.stringify({ ScaleUp: rules(b.scaleUp), ScaleDown: rules(b.scaleDown) });
}

function behaviorFromAnnotation(raw: string): any | undefined {
  let v: any;
  try {
    v = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (!isObj(v)) return undefined;
  const get = (o: Record<string, any>, name: string) => {
    const k = Object.keys(o).find((x) => x.toLowerCase() === name.toLowerCase());
    return k === undefined ? undefined : o[k];
  };
  const rules = (r: any) => {
    if (!isObj(r)) return undefined;
    const policies = get(r, 'policies');
    return pick(
      {
        stabilizationWindowSeconds: get(r, 'stabilizationWindowSeconds') ?? undefined,
        selectPolicy: get(r, 'selectPolicy') ?? undefined,
        policies: Array.isArray(policies) ? policies.map((p: any) => (isObj(p) ? { type: get(p, 'type'), value: get(p, 'value'), periodSeconds: get(p, 'periodSeconds') } : p)) : undefined,
      },
      ['stabilizationWindowSeconds', 'selectPolicy', 'policies'],
    );
  };
  return pick({ scaleUp: rules(get(v, 'scaleUp')), scaleDown: rules(get(v, 'scaleDown')) }, ['scaleUp', 'scaleDown']);
}

const isCpuResource = (m: any) => m?.type === 'Resource' && isObj(m.resource) && m.resource.name === 'cpu';

/** Stored autoscaling/v2 -> autoscaling/v1. */
function hpaV2ToV1(obj: any, apiVersion: string): any {
  const spec = obj.spec ?? {};
  const status = obj.status ?? {};
  const metrics: any[] = Array.isArray(spec.metrics) ? spec.metrics : [];
  const currentMetrics: any[] = Array.isArray(status.currentMetrics) ? status.currentMetrics : [];
  const conditions: any[] = Array.isArray(status.conditions) ? status.conditions : [];
  // Every metric but a CPU utilization target rides in an annotation.
  const others = metrics.filter((m) => !(isCpuResource(m) && m.resource.target?.averageUtilization != null)).map(metricSpecToV1);
  const metadata = withAnnotations(obj.metadata, (a) => {
    for (const k of HPA_ROUND_TRIP) delete a[k];
    if (others.length) a[HPA_METRICS] = JSON.stringify(others);
    if (isObj(spec.behavior)) a[HPA_BEHAVIOR] = behaviorToAnnotation(spec.behavior);
    // the whole status, even a CPU one that maps to a field: the annotation keeps its raw value too
    if (currentMetrics.length) a[HPA_CURRENT_METRICS] = JSON.stringify(currentMetrics.map(metricStatusToV1));
    if (conditions.length) a[HPA_CONDITIONS] = JSON.stringify(conditions.map(conditionOf));
  });
  const outSpec = pick(spec, ['scaleTargetRef', 'minReplicas', 'maxReplicas']);
  const cpu = metrics.find(isCpuResource);
  if (cpu && cpu.resource.target?.averageUtilization != null) outSpec.targetCPUUtilizationPercentage = cpu.resource.target.averageUtilization;
  const outStatus: any = pick(status, ['observedGeneration', 'lastScaleTime']);
  outStatus.currentReplicas = status.currentReplicas ?? 0;
  outStatus.desiredReplicas = status.desiredReplicas ?? 0;
  for (const m of currentMetrics) {
    if (m?.type === 'Resource' && m.resource?.name === 'cpu' && m.resource.current?.averageUtilization != null) outStatus.currentCPUUtilizationPercentage = m.resource.current.averageUtilization;
  }
  const out: any = { ...obj, apiVersion, metadata, spec: outSpec, status: outStatus };
  return out;
}

function parseAnnotation(a: Record<string, string>, key: string): any[] | undefined {
  const raw = a[key];
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw);
    return Array.isArray(v) ? v : [];
  } catch {
    return undefined; // kube fails the conversion; we drop what cannot be read
  }
}

/** autoscaling/v1 -> stored autoscaling/v2. */
function hpaV1ToV2(obj: any, apiVersion: string): any {
  const spec = obj.spec ?? {};
  const status = obj.status;
  const a: Record<string, string> = { ...(obj.metadata?.annotations ?? {}) };
  const others = parseAnnotation(a, HPA_METRICS);
  const currentFromAnnotation = parseAnnotation(a, HPA_CURRENT_METRICS);
  const conditionsFromAnnotation = parseAnnotation(a, HPA_CONDITIONS);
  let metrics: any[] = [];
  if (others) metrics = others.map(metricSpecFromV1);
  if (spec.targetCPUUtilizationPercentage != null) {
    metrics.push({ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: spec.targetCPUUtilizationPercentage } } });
  }
  // autoscaling/v1's implicit target, made explicit: 80% CPU
  if (metrics.length === 0) metrics = [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: DEFAULT_CPU_UTILIZATION } } }];
  const outSpec: any = pick(spec, ['scaleTargetRef', 'minReplicas', 'maxReplicas']);
  outSpec.metrics = metrics;
  const behavior = a[HPA_BEHAVIOR] === undefined ? undefined : behaviorFromAnnotation(a[HPA_BEHAVIOR]);
  if (behavior) outSpec.behavior = behavior;
  const out: any = { ...obj, apiVersion, metadata: withAnnotations(obj.metadata, (x) => HPA_ROUND_TRIP.forEach((k) => delete x[k])), spec: outSpec };
  if (status !== undefined || currentFromAnnotation || conditionsFromAnnotation) {
    const s = status ?? {};
    const outStatus: any = pick(s, ['observedGeneration', 'lastScaleTime', 'currentReplicas', 'desiredReplicas']);
    if (currentFromAnnotation) outStatus.currentMetrics = currentFromAnnotation.map(metricStatusFromV1);
    else if (s.currentCPUUtilizationPercentage != null) outStatus.currentMetrics = [{ type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: s.currentCPUUtilizationPercentage } } }];
    if (conditionsFromAnnotation) outStatus.conditions = conditionsFromAnnotation.map(conditionOf);
    out.status = outStatus;
  }
  return out;
}

HAND['autoscaling/v2|autoscaling/v1|HorizontalPodAutoscaler'] = hpaV2ToV1;
HAND['autoscaling/v1|autoscaling/v2|HorizontalPodAutoscaler'] = hpaV1ToV2;

// ---- core/v1 <-> events.k8s.io/v1 Event --------------------------------------------------

const nonEmpty = (v: unknown) => (v === '' || v === 0 || v === null ? undefined : v);

/** Stored core/v1 Event -> events.k8s.io/v1 (field order and omitempty of its Go type). */
function coreEventToEvents(obj: any, apiVersion: string): any {
  return {
    kind: obj.kind ?? 'Event',
    apiVersion,
    metadata: obj.metadata,
    eventTime: obj.eventTime ?? null,
    series: nonEmpty(obj.series),
    reportingController: nonEmpty(obj.reportingComponent),
    reportingInstance: nonEmpty(obj.reportingInstance),
    action: nonEmpty(obj.action),
    reason: nonEmpty(obj.reason),
    regarding: obj.involvedObject ?? {},
    related: nonEmpty(obj.related),
    note: nonEmpty(obj.message),
    type: nonEmpty(obj.type),
    deprecatedSource: obj.source ?? {},
    deprecatedFirstTimestamp: obj.firstTimestamp ?? null,
    deprecatedLastTimestamp: obj.lastTimestamp ?? null,
    deprecatedCount: nonEmpty(obj.count),
  };
}

/** events.k8s.io/v1 Event -> stored core/v1 (field order and omitempty of the core Go type). */
function eventsToCoreEvent(obj: any, apiVersion: string): any {
  return {
    kind: obj.kind ?? 'Event',
    apiVersion,
    metadata: obj.metadata,
    involvedObject: obj.regarding ?? {},
    reason: nonEmpty(obj.reason),
    message: nonEmpty(obj.note),
    source: obj.deprecatedSource ?? {},
    firstTimestamp: obj.deprecatedFirstTimestamp ?? null,
    lastTimestamp: obj.deprecatedLastTimestamp ?? null,
    count: nonEmpty(obj.deprecatedCount),
    type: nonEmpty(obj.type),
    eventTime: obj.eventTime ?? null,
    series: nonEmpty(obj.series),
    action: nonEmpty(obj.action),
    related: nonEmpty(obj.related),
    reportingComponent: obj.reportingController ?? '',
    reportingInstance: obj.reportingInstance ?? '',
  };
}

HAND['v1|events.k8s.io/v1|Event'] = coreEventToEvents;
HAND['events.k8s.io/v1|v1|Event'] = eventsToCoreEvent;

// ---- resource.k8s.io v1beta2 / v1alpha3 <-> v1beta1 ---------------------------------------

const EXACT_FIELDS = ['deviceClassName', 'selectors', 'allocationMode', 'count', 'adminAccess', 'tolerations'];
const BASIC_FIELDS = ['attributes', 'capacity', 'consumesCounters', 'nodeName', 'nodeSelector', 'allNodes', 'taints'];

/** Applies f to each device request of a ResourceClaimSpec (spec of a claim, spec.spec of a template). */
function mapRequests(claimSpec: any, f: (r: any) => any): any {
  if (!isObj(claimSpec) || !isObj(claimSpec.devices) || !Array.isArray(claimSpec.devices.requests)) return claimSpec;
  return { ...claimSpec, devices: { ...claimSpec.devices, requests: claimSpec.devices.requests.map((r: any) => (isObj(r) ? f(r) : r)) } };
}

/** v1beta1 request -> v1beta2: the one-device fields move under `exactly`, unless the request lists firstAvailable. */
function requestToV1beta2(r: any): any {
  const out: any = pick(r, ['name']);
  const hasFirst = Array.isArray(r.firstAvailable) && r.firstAvailable.length > 0;
  if (!hasFirst) out.exactly = pick(r, EXACT_FIELDS);
  return pick(r, ['firstAvailable'], out);
}

function requestFromV1beta2(r: any): any {
  const out: any = pick(r, ['name']);
  if (isObj(r.exactly)) pick(r.exactly, ['deviceClassName', 'selectors', 'allocationMode', 'count', 'adminAccess'], out);
  pick(r, ['firstAvailable'], out);
  if (isObj(r.exactly)) pick(r.exactly, ['tolerations'], out);
  return out;
}

function claimConverter(toRequest: (r: any) => any, template: boolean): Convert {
  return (obj, apiVersion) => {
    const out: any = { ...obj, apiVersion };
    if (template) {
      if (isObj(obj.spec)) out.spec = { ...obj.spec, spec: mapRequests(obj.spec.spec, toRequest) };
    } else out.spec = mapRequests(obj.spec, toRequest);
    if (out.spec === undefined) delete out.spec;
    return out;
  };
}

function mapDevices(obj: any, apiVersion: string, f: (d: any) => any): any {
  const out: any = { ...obj, apiVersion };
  if (isObj(obj.spec) && Array.isArray(obj.spec.devices)) out.spec = { ...obj.spec, devices: obj.spec.devices.map((d: any) => (isObj(d) ? f(d) : d)) };
  return out;
}

/** v1beta1 Device {name, basic: {...}} -> v1beta2 Device {name, ...}. */
const deviceToV1beta2 = (d: any) => pick(isObj(d.basic) ? d.basic : {}, BASIC_FIELDS, pick(d, ['name']));
const deviceFromV1beta2 = (d: any) => {
  const out: any = pick(d, ['name']);
  const basic = pick(d, BASIC_FIELDS);
  if (Object.keys(basic).length) out.basic = basic;
  return out;
};

/** v1beta1 capacities {value: q} <-> v1alpha3's bare quantities. */
function mapCapacity(d: any, f: (c: any) => any): any {
  if (!isObj(d.basic) || !isObj(d.basic.capacity)) return d;
  const capacity: Record<string, any> = {};
  for (const [k, c] of Object.entries(d.basic.capacity)) setOwn(capacity, k, f(c));
  return { ...d, basic: { ...d.basic, capacity } };
}

const RB1 = 'resource.k8s.io/v1beta1';
const RB2 = 'resource.k8s.io/v1beta2';
const RA3 = 'resource.k8s.io/v1alpha3';
HAND[`${RB1}|${RB2}|ResourceClaim`] = claimConverter(requestToV1beta2, false);
HAND[`${RB2}|${RB1}|ResourceClaim`] = claimConverter(requestFromV1beta2, false);
HAND[`${RB1}|${RB2}|ResourceClaimTemplate`] = claimConverter(requestToV1beta2, true);
HAND[`${RB2}|${RB1}|ResourceClaimTemplate`] = claimConverter(requestFromV1beta2, true);
HAND[`${RB1}|${RB2}|ResourceSlice`] = (obj, v) => mapDevices(obj, v, deviceToV1beta2);
HAND[`${RB2}|${RB1}|ResourceSlice`] = (obj, v) => mapDevices(obj, v, deviceFromV1beta2);
HAND[`${RB1}|${RA3}|ResourceSlice`] = (obj, v) => mapDevices(obj, v, (d) => mapCapacity(d, (c) => (isObj(c) ? c.value : c)));
HAND[`${RA3}|${RB1}|ResourceSlice`] = (obj, v) => mapDevices(obj, v, (d) => mapCapacity(d, (c) => (isObj(c) ? c : { value: c })));
