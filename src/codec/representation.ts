// Encoding of objects, lists, watch events and Status errors in the negotiated
// representation (JSON, YAML, protobuf, CBOR; as-is, as PartialObjectMetadata, or as a
// Table).
//
// The stored JSON bytes are the source. Every other encoding of an object version is
// made once and memoized on the object's cache entry (`enc`), so all readers and
// watchers of that version share the same bytes; a watch frame is memoized on its event
// per representation. Entries are owned by the front thread, as the cache is.
import { stringify as toYaml } from 'yaml';
import { errors, StatusError } from '../errors.js';
import type { ResourceTarget } from '../registry/store.js';
import { asPartialObjectMetadata } from './partial.js';
import { itemPrefix, itemValue, pushItem } from './list-item.js';
import { cborWatchFrame, encodeCbor } from './cbor.js';
import { CBOR_MEDIA_TYPE, JSON_MEDIA_TYPE, PROTOBUF_MEDIA_TYPE, YAML_MEDIA_TYPE, type Representation } from './negotiate.js';
import { encodeMessage, envelope, listMessage, protoTypeOf, watchFrame as protoWatchFrame } from './protobuf-encode.js';
import { buildTable, printerFor, renderTable, type IncludeObject } from '../api/table/table.js';
import { customPrinter } from '../api/table/custom.js';

/** Anything that carries an object's stored JSON: a cache entry, or an item read from the log. */
export interface Encodable {
  json: Buffer;
  /** memoized parse; shared, never mutate */
  obj?: any;
  /** memoized encodings, by representation key */
  enc?: Map<string, Buffer>;
}

export interface EncodeContext {
  target: ResourceTarget;
  /** apiVersion and kind of the resource's objects, and of its list */
  apiVersion: string;
  kind: string;
  listKind: string;
  /** includeObject, for Table */
  table?: { includeObject: IncludeObject };
  /**
   * When the resource's version is not its storage version: the stored entry as this
   * version sees it (src/registry/conversion.ts viewOf, memoized per entry and version).
   * Watch frames then go through it, and are memoized per apiVersion too.
   */
  view?: (e: Encodable) => Encodable;
}

export function parsed(e: Encodable): any {
  if (e.obj === undefined) e.obj = JSON.parse(e.json.toString('utf8'));
  return e.obj;
}

function memo(e: Encodable, key: string, make: () => Buffer): Buffer {
  let m = e.enc;
  if (!m) m = e.enc = new Map();
  let b = m.get(key);
  if (!b) {
    b = make();
    m.set(key, b);
  }
  return b;
}

/**
 * YAML as kube-apiserver writes it (sigs.k8s.io/yaml over go-yaml v2): JSON turned into
 * YAML, keys sorted, no line folding, sequences not indented under their key, and strings
 * quoted wherever YAML 1.1 would read them as something else (timestamps, yes/no/on/off,
 * y/n, octal, 1:20), so a YAML 1.1 reader gets the same JSON back.
 */
export function yamlOf(v: unknown): Buffer {
  return Buffer.from(toYaml(v, { version: '1.1', sortMapEntries: true, lineWidth: 0, minContentWidth: 0, aliasDuplicateObjects: false, indentSeq: false }));
}

/** Any value in a media type (no protobuf: that needs a kind). */
function encodeValue(v: unknown, mediaType: string): Buffer {
  if (mediaType === YAML_MEDIA_TYPE) return yamlOf(v);
  if (mediaType === CBOR_MEDIA_TYPE) return encodeCbor(v);
  return Buffer.from(JSON.stringify(v));
}

function goTypeName(apiVersion: string, kind: string): string {
  return `*${apiVersion.split('/').pop()}.${kind}`;
}

/** The bare protobuf message of an object version (no envelope), memoized. */
function protoRaw(e: Encodable, apiVersion: string, kind: string): Buffer {
  return memo(e, 'pb-raw', () => {
    const t = protoTypeOf(apiVersion, kind);
    if (!t) throw errors.notAcceptable(['application/json', 'application/yaml']);
    return encodeMessage(t, parsed(e));
  });
}

function pomVersion(r: Representation): 'v1' | 'v1beta1' {
  return r.as?.version === 'v1beta1' ? 'v1beta1' : 'v1';
}

function pomProtoRaw(e: Encodable): Buffer {
  return memo(e, 'pom-pb-raw', () => encodeMessage(protoTypeOf('meta.k8s.io/v1', 'PartialObjectMetadata')!, asPartialObjectMetadata(parsed(e))));
}

/** A Table of the objects (src/api/table's printers), in JSON or YAML. */
function encodeTable(entries: Encodable[], listMeta: Record<string, unknown>, ctx: EncodeContext, r: Representation, noHeaders = false): Buffer {
  const custom = ctx.target.info.custom;
  const printer = custom ? customPrinter(custom.columns) : printerFor(ctx.target.info.group, ctx.target.info.resource);
  const opts = { includeObject: ctx.table?.includeObject ?? 'Metadata', noHeaders, now: Date.now(), version: r.as!.version } as const;
  if (r.mediaType === JSON_MEDIA_TYPE) return renderTable(printer, entries.map((e) => ({ obj: parsed(e), raw: e.json })), listMeta, opts);
  return encodeValue(buildTable(printer, entries.map(parsed), listMeta, opts), r.mediaType);
}

/** One object (a get, or the object of a write's response) in the representation. */
export function encodeObject(e: Encodable, r: Representation, ctx: EncodeContext): Buffer {
  const mt = r.mediaType;
  if (!r.as) {
    if (mt === JSON_MEDIA_TYPE) return e.json;
    if (mt === PROTOBUF_MEDIA_TYPE) return memo(e, 'pb', () => envelope(ctx.apiVersion, ctx.kind, protoRaw(e, ctx.apiVersion, ctx.kind)));
    return memo(e, mt, () => encodeValue(parsed(e), mt));
  }
  switch (r.as.kind) {
    case 'PartialObjectMetadata': {
      const v = pomVersion(r);
      if (mt === PROTOBUF_MEDIA_TYPE) return memo(e, `pom-pb-${v}`, () => envelope(`meta.k8s.io/${v}`, 'PartialObjectMetadata', pomProtoRaw(e)));
      return memo(e, `pom-${v}-${mt}`, () => encodeValue(asPartialObjectMetadata(parsed(e), v), mt));
    }
    case 'PartialObjectMetadataList':
      throw notAcceptable(`you requested PartialObjectMetadataList, but the requested object is not a list (${goTypeName(ctx.apiVersion, ctx.kind)})`);
    case 'Table':
      return encodeTable([e], { resourceVersion: parsed(e)?.metadata?.resourceVersion ?? '' }, ctx, r);
  }
}

/** The object form of an encoded response, for callers that need the value (YAML/CBOR of a whole list). */
function objectView(e: Encodable, r: Representation): any {
  if (r.as?.kind === 'PartialObjectMetadata' || r.as?.kind === 'PartialObjectMetadataList') return asPartialObjectMetadata(parsed(e), pomVersion(r));
  return parsed(e);
}

const COMMA = Buffer.from(',');
/** The tail of a JSON list after its last item. */
export const JSON_LIST_TAIL = Buffer.from(']}');

/** A JSON list up to its first item: `{"kind":…,"apiVersion":…,"metadata":…,"items":[`. */
export function jsonListHead(kind: string, apiVersion: string, meta: Record<string, unknown>): Buffer {
  return Buffer.from(`{"kind":${JSON.stringify(kind)},"apiVersion":${JSON.stringify(apiVersion)},"metadata":${JSON.stringify(meta)},"items":[`);
}

function jsonList(kind: string, apiVersion: string, meta: Record<string, unknown>, items: Buffer[], prefix?: Buffer): Buffer {
  const parts: Buffer[] = [jsonListHead(kind, apiVersion, meta)];
  for (let i = 0; i < items.length; i++) {
    if (i > 0) parts.push(COMMA);
    pushItem(parts, items[i], prefix);
  }
  parts.push(JSON_LIST_TAIL);
  return Buffer.concat(parts);
}

/** A collection in the representation; the items' encodings are shared, only the frame is new. */
export function encodeList(entries: Encodable[], listMeta: Record<string, unknown>, r: Representation, ctx: EncodeContext): Buffer {
  const mt = r.mediaType;
  if (r.as?.kind === 'PartialObjectMetadata') {
    throw notAcceptable(`you requested PartialObjectMetadata, but the requested object is a list (${goTypeName(ctx.apiVersion, ctx.listKind)})`);
  }
  if (r.as?.kind === 'Table') return encodeTable(entries, listMeta, ctx, r);
  const pom = r.as?.kind === 'PartialObjectMetadataList';
  const kind = pom ? 'PartialObjectMetadataList' : ctx.listKind;
  const apiVersion = pom ? `meta.k8s.io/${pomVersion(r)}` : ctx.apiVersion;
  if (mt === JSON_MEDIA_TYPE) {
    if (pom) return jsonList(kind, apiVersion, listMeta, entries.map((e) => encodeObject(e, { ...r, as: { ...r.as!, kind: 'PartialObjectMetadata' } }, ctx)));
    return jsonList(kind, apiVersion, listMeta, entries.map((e) => e.json), itemPrefix(ctx.target));
  }
  if (mt === PROTOBUF_MEDIA_TYPE) {
    const listType = protoTypeOf(pom ? 'meta.k8s.io/v1' : apiVersion, kind);
    if (!listType) throw errors.notAcceptable(['application/json', 'application/yaml']);
    const items = pom ? entries.map(pomProtoRaw) : entries.map((e) => protoRaw(e, ctx.apiVersion, ctx.kind));
    return envelope(apiVersion, kind, listMessage(listType, listMeta, items));
  }
  const prefix = pom ? undefined : itemPrefix(ctx.target);
  const list = { kind, apiVersion, metadata: listMeta, items: entries.map((e) => itemValue(objectView(e, r), prefix)) };
  return encodeValue(list, mt);
}

/** A Status (error or success) in the media type. */
export function encodeStatus(status: Record<string, any>, mediaType: string): Buffer {
  if (mediaType === PROTOBUF_MEDIA_TYPE) {
    const t = protoTypeOf('v1', 'Status')!;
    return envelope('v1', 'Status', encodeMessage(t, status));
  }
  return encodeValue(status, mediaType);
}

function notAcceptable(message: string): StatusError {
  return new StatusError(406, 'NotAcceptable', message);
}

// ---- watch ----------------------------------------------------------------------

const JSON_FRAME_HEAD: Record<string, Buffer> = {};
function jsonFrameHead(type: string): Buffer {
  return (JSON_FRAME_HEAD[type] ??= Buffer.from(`{"type":${JSON.stringify(type)},"object":`));
}
const JSON_FRAME_TAIL = Buffer.from('}\n');

/** A watch frame for an event of `type` carrying the already-encoded object, in the stream's media type. */
export function frameFromEncoded(type: string, encoded: Buffer, obj: () => any, r: Representation): Buffer {
  switch (r.mediaType) {
    case PROTOBUF_MEDIA_TYPE:
      return protoWatchFrame(type, encoded);
    case CBOR_MEDIA_TYPE:
      return cborWatchFrame(type, obj());
    default:
      return Buffer.concat([jsonFrameHead(type), encoded, JSON_FRAME_TAIL]);
  }
}

/** The watch frame of a stored object version sent as `type`. Table frames are the caller's (they differ per watcher). */
export function entryFrame(type: string, e: Encodable, r: Representation, ctx: EncodeContext): Buffer {
  if (r.mediaType === CBOR_MEDIA_TYPE) return cborWatchFrame(type, objectView(e, r));
  return frameFromEncoded(type, encodeObject(e, r, ctx), () => objectView(e, r), r);
}

/** The watch frame of a Table event: one row; column definitions only on a watcher's first event. */
export function tableFrame(type: string, e: Encodable, r: Representation, ctx: EncodeContext, headers: boolean): Buffer {
  return frameFromEncoded(type, encodeTable([e], { resourceVersion: parsed(e)?.metadata?.resourceVersion ?? '' }, ctx, r, !headers), () => null, r);
}

/** A watch frame of an object that is not a stored version (an ERROR Status, a BOOKMARK). */
export function valueFrame(type: string, value: Record<string, any>, r: Representation): Buffer {
  if (r.mediaType === PROTOBUF_MEDIA_TYPE) {
    const t = protoTypeOf(value.apiVersion, value.kind);
    const enc = t ? envelope(value.apiVersion, value.kind, encodeMessage(t, value)) : Buffer.alloc(0);
    return protoWatchFrame(type, enc);
  }
  if (r.mediaType === CBOR_MEDIA_TYPE) return cborWatchFrame(type, value);
  return Buffer.concat([jsonFrameHead(type), Buffer.from(JSON.stringify(value)), JSON_FRAME_TAIL]);
}

/** The key a watch frame is memoized under on its event, per representation. */
export function frameKey(type: string, r: Representation): string {
  return `${type}|${r.mediaType}|${r.as ? `${r.as.kind}/${r.as.version}` : ''}`;
}

/** What a watch frame is built from: a committed event (workers/watch WatchEvent fits). */
export interface FrameSource {
  entry: Encodable;
  encFrames?: Map<string, Buffer>;
}

/**
 * What a frame of `type` encodes: by default the event's entry. The watch handler passes
 * the cache's entryAs, so that an update leaving a watcher's selector is a DELETED of the
 * state it last matched in every representation and version, as the JSON fast path sends it.
 */
export type EntryOf = (ev: FrameSource, type: string) => Encodable;

function memoFrame(ev: FrameSource, key: string, make: () => Buffer): Buffer {
  let m = ev.encFrames;
  if (!m) m = ev.encFrames = new Map();
  let b = m.get(key);
  if (!b) {
    b = make();
    m.set(key, b);
  }
  return b;
}

/**
 * The frame builder of one watcher in representation r, or undefined for plain JSON (the
 * cache's own frameOf). Frames are memoized on the event, shared by every watcher with the
 * same representation; a Table watcher's first frame carries the column definitions.
 */
export function watchFramer(r: Representation, ctx: EncodeContext, entryOf: EntryOf = (ev) => ev.entry): ((ev: FrameSource, type: string) => Buffer) | undefined {
  if (!r.as && r.mediaType === JSON_MEDIA_TYPE && !ctx.view) return undefined;
  const view = ctx.view ?? ((e: Encodable) => e);
  // Frames of a converted version differ from the stored version's: keyed by apiVersion too.
  const suffix = ctx.view ? `|${ctx.apiVersion}` : '';
  if (r.as?.kind === 'PartialObjectMetadataList') {
    throw notAcceptable(`you requested PartialObjectMetadataList, but the requested object is not a list (${goTypeName(ctx.apiVersion, ctx.kind)})`);
  }
  if (r.as?.kind === 'Table') {
    let first = true;
    return (ev, type) => {
      const headers = first;
      first = false;
      return memoFrame(ev, frameKey(type, r) + suffix + (headers ? '|h' : ''), () => tableFrame(type, view(entryOf(ev, type)), r, ctx, headers));
    };
  }
  return (ev, type) => memoFrame(ev, frameKey(type, r) + suffix, () => entryFrame(type, view(entryOf(ev, type)), r, ctx));
}
