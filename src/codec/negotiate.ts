// Content negotiation, as kube-apiserver's endpoints/handlers/negotiation does it.
//
// Accept is parsed into clauses and ordered by q (highest first), then concrete types
// before wildcards (goautoneg's order). The first clause that names a media type we serve
// and whose parameters we can honour wins: `as`/`g`/`v` ask for a conversion (Table,
// PartialObjectMetadata, PartialObjectMetadataList of meta.k8s.io v1 or v1beta1), `stream`
// must be `watch` on a type that streams, `pretty=1` indents. A clause we cannot honour
// is skipped, not fatal; when none is left the answer is 406 with the served types.
//
// Requests without Accept get JSON. Status errors are negotiated with no conversions
// allowed and fall back to JSON when nothing matches (kube never hides an error behind a
// negotiation failure).
import { errors, StatusError } from '../errors.js';
import { features } from '../features.js';

export const JSON_MEDIA_TYPE = 'application/json';
export const YAML_MEDIA_TYPE = 'application/yaml';
export const PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';
export const CBOR_MEDIA_TYPE = 'application/cbor';
export const CBOR_SEQ_MEDIA_TYPE = 'application/cbor-seq';

export type MediaType = typeof JSON_MEDIA_TYPE | typeof YAML_MEDIA_TYPE | typeof PROTOBUF_MEDIA_TYPE | typeof CBOR_MEDIA_TYPE;
export type ConversionKind = 'Table' | 'PartialObjectMetadata' | 'PartialObjectMetadataList';

export interface Conversion {
  kind: ConversionKind;
  group: 'meta.k8s.io';
  version: 'v1' | 'v1beta1';
}

export interface Representation {
  mediaType: MediaType;
  /** set when the client asked for the object in another form (`as=...;g=...;v=...`) */
  as?: Conversion;
  pretty: boolean;
}

export interface AcceptClause {
  type: string;
  subType: string;
  q: number;
  params: Record<string, string>;
}

/** Parses an Accept header the way goautoneg does (no unquoting, names as sent). */
export function parseAccept(header: string): AcceptClause[] {
  const out: AcceptClause[] = [];
  for (const rawPart of header.split(',')) {
    const part = rawPart.trim();
    const segs = part.split(';');
    const range = segs[0].split('/');
    const type = range[0].trim();
    let subType: string;
    if (range.length === 1 && type === '*') subType = '*';
    else if (range.length === 2) subType = range[1].trim();
    else continue;
    const c: AcceptClause = { type, subType, q: 1, params: {} };
    for (const p of segs.slice(1)) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const k = p.slice(0, eq).trim();
      const v = p.slice(eq + 1).trim();
      if (k === 'q') {
        const n = parseFloat(v);
        c.q = Number.isFinite(n) ? n : 0;
      } else c.params[k] = v;
    }
    out.push(c);
  }
  // Stable: equal clauses keep the client's order.
  const rank = (c: AcceptClause) => (c.type === '*' ? 0 : c.subType === '*' ? 1 : 2);
  return out
    .map((c, i) => ({ c, i }))
    .sort((a, b) => b.c.q - a.c.q || rank(b.c) - rank(a.c) || a.i - b.i)
    .map((x) => x.c);
}

/** The media types we serve, in kube's order (it is also the order of the 406 message). */
export function servedMediaTypes(): MediaType[] {
  const t: MediaType[] = [JSON_MEDIA_TYPE, YAML_MEDIA_TYPE, PROTOBUF_MEDIA_TYPE];
  if (features.enabled('CBORServingAndStorage')) t.push(CBOR_MEDIA_TYPE);
  return t;
}

function streams(mt: MediaType): boolean {
  return mt !== YAML_MEDIA_TYPE;
}

/** The watch media types, as kube lists them in a watch's 406. */
export function streamMediaTypes(): string[] {
  return servedMediaTypes()
    .filter(streams)
    .map((mt) => (mt === CBOR_MEDIA_TYPE ? CBOR_SEQ_MEDIA_TYPE : `${mt};stream=watch`));
}

export interface NegotiateOptions {
  /** a watch: the chosen type must stream */
  stream?: boolean;
  /** conversions (as=Table / PartialObjectMetadata...) are allowed: resource endpoints; false for Status */
  conversions?: boolean;
  /** the resource has a Table convertor (every built-in does) */
  table?: boolean;
}

function conversionOf(params: Record<string, string>): Conversion | null | undefined {
  if (!('as' in params) && !('g' in params) && !('v' in params)) return undefined;
  const kind = params.as ?? '';
  const group = params.g ?? '';
  const version = params.v ?? '';
  if (group !== 'meta.k8s.io' || (version !== 'v1' && version !== 'v1beta1')) return null;
  if (kind !== 'Table' && kind !== 'PartialObjectMetadata' && kind !== 'PartialObjectMetadataList') return null;
  return { kind, group, version };
}

function accepts(c: AcceptClause, mt: MediaType): boolean {
  const [type, sub] = mt.split('/');
  return (c.type === type && (c.subType === sub || c.subType === '*')) || (c.type === '*' && c.subType === '*');
}

/** Plain JSON, the answer to most requests: one shared object, so callers can test identity. */
export const JSON_REPRESENTATION: Representation = Object.freeze({ mediaType: JSON_MEDIA_TYPE, pretty: false }) as Representation;

/** Picks the representation, or null when nothing requested can be served. */
export function chooseRepresentation(accept: string | undefined, o: NegotiateOptions = {}): Representation | null {
  // The common cases without parsing.
  if (!accept || accept === JSON_MEDIA_TYPE || accept === '*/*') return JSON_REPRESENTATION;
  const served = servedMediaTypes();
  for (const c of parseAccept(accept)) {
    for (const mt of served) {
      if (!accepts(c, mt)) continue;
      const r = honour(c, mt, o);
      if (r) return r;
    }
  }
  return null;
}

function honour(c: AcceptClause, mt: MediaType, o: NegotiateOptions): Representation | null {
  const p = c.params;
  if (p.stream !== undefined && p.stream !== '' && (!streams(mt) || p.stream !== 'watch')) return null;
  if (p.sv !== undefined && p.sv !== '') return null;
  const conv = conversionOf(p);
  if (conv === null) return null;
  if (conv) {
    if (!o.conversions) return null;
    // kube converts to Table only in JSON and YAML.
    if (conv.kind === 'Table' && (o.table === false || (mt !== JSON_MEDIA_TYPE && mt !== YAML_MEDIA_TYPE))) return null;
  }
  // A watch of a type without a stream serializer is refused after the choice, as kube does.
  if (o.stream && !streams(mt)) return { mediaType: mt, as: conv, pretty: p.pretty === '1' };
  if (!conv && p.pretty !== '1' && mt === JSON_MEDIA_TYPE) return JSON_REPRESENTATION;
  return { mediaType: mt, ...(conv ? { as: conv } : {}), pretty: p.pretty === '1' };
}

/** The representation of a resource response (get, list, create...); 406 when none fits. */
export function negotiateOutput(accept: string | undefined, o: NegotiateOptions = { conversions: true, table: true }): Representation {
  const r = chooseRepresentation(accept, o);
  if (!r) throw errors.notAcceptable(servedMediaTypes());
  return r;
}

/** The representation of a watch stream; 406 listing the stream types when none fits. */
export function negotiateStream(accept: string | undefined, o: NegotiateOptions = { conversions: true, table: true }): Representation {
  const r = chooseRepresentation(accept, { ...o, stream: true });
  if (!r || !streams(r.mediaType)) throw errors.notAcceptable(streamMediaTypes());
  return r;
}

/** The representation of a Status error: no conversions, JSON when nothing else fits. */
export function negotiateError(accept: string | undefined): Representation {
  return chooseRepresentation(accept, { conversions: false }) ?? { mediaType: JSON_MEDIA_TYPE, pretty: false };
}

/** The Content-Type a watch stream is sent with. */
export function streamContentType(mt: MediaType): string {
  if (mt === JSON_MEDIA_TYPE) return JSON_MEDIA_TYPE;
  if (mt === CBOR_MEDIA_TYPE) return CBOR_SEQ_MEDIA_TYPE;
  return `${mt};stream=watch`;
}

/** The media type of a request body, lower-cased and without parameters; JSON when absent. */
export function requestMediaType(contentType: string | undefined): string {
  if (!contentType) return JSON_MEDIA_TYPE;
  return contentType.split(';')[0].trim().toLowerCase();
}

/** Body types create and update accept; 415 for any other. */
export function decodableMediaTypes(): string[] {
  return servedMediaTypes();
}

export function unsupportedBody(): StatusError {
  return errors.unsupportedMediaType(decodableMediaTypes());
}

/** Whether a conversion's result describes a list (PartialObjectMetadataList, a Table of many rows). */
export function conversionApiVersion(c: Conversion): string {
  return `${c.group}/${c.version}`;
}
