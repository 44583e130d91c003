// The protobuf form of the swagger 2.0 document (media type
// application/com.github.proto-openapi.spec.v2@v1.0+protobuf), which is the only form
// client-go's OpenAPISchema() accepts: it sends that Accept alone and unmarshals the body
// into gnostic's openapi_v2.Document. We encode the subset of that message set our JSON
// document uses, with a small hand-rolled wire writer (no schema compiler at run time).
//
// Field numbers are those of gnostic's OpenAPIv2 messages (package openapi.v2). Vendor
// extensions (x-kubernetes-*) travel as Any{yaml}; JSON text is valid YAML, so the value
// is written as its JSON.
//
// Built once at start-up from the JSON document (front thread); the bytes are shared.

class Writer {
  private chunks: Buffer[] = [];
  private len = 0;

  private push(b: Buffer): void {
    this.chunks.push(b);
    this.len += b.length;
  }

  private varint(n: number): void {
    const out: number[] = [];
    while (n > 0x7f) {
      out.push((n & 0x7f) | 0x80);
      n = Math.floor(n / 128);
    }
    out.push(n);
    this.push(Buffer.from(out));
  }

  private tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  string(field: number, s: string | undefined): this {
    if (s === undefined || s === '') return this;
    const b = Buffer.from(s, 'utf8');
    this.tag(field, 2);
    this.varint(b.length);
    this.push(b);
    return this;
  }

  strings(field: number, ss: string[] | undefined): this {
    for (const s of ss ?? []) {
      const b = Buffer.from(s, 'utf8');
      this.tag(field, 2);
      this.varint(b.length);
      this.push(b);
    }
    return this;
  }

  bool(field: number, v: boolean | undefined): this {
    if (!v) return this;
    this.tag(field, 0);
    this.varint(1);
    return this;
  }

  message(field: number, m: Writer | undefined): this {
    if (!m) return this;
    const b = m.bytes();
    this.tag(field, 2);
    this.varint(b.length);
    this.push(b);
    return this;
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.len);
  }
}

type Json = Record<string, any>;
const w = () => new Writer();

/** NamedAny list of the x-* keys of a JSON object: Any{yaml = JSON text}. */
function vendorExtensions(field: number, o: Json, out: Writer): void {
  for (const [k, v] of Object.entries(o)) {
    if (!k.startsWith('x-')) continue;
    out.message(field, w().string(1, k).message(2, w().string(2, JSON.stringify(v))));
  }
}

function schema(s: Json): Writer {
  const out = w().string(1, s.$ref).string(2, s.format);
  out.strings(19, s.required);
  if (s.additionalProperties && typeof s.additionalProperties === 'object') out.message(21, w().message(1, schema(s.additionalProperties)));
  if (s.type) out.message(22, w().strings(1, [s.type]));
  if (s.items) out.message(23, w().message(1, schema(s.items)));
  if (s.properties) {
    const props = w();
    for (const [k, v] of Object.entries(s.properties as Json)) props.message(1, w().string(1, k).message(2, schema(v)));
    out.message(25, props);
  }
  vendorExtensions(31, s, out);
  return out;
}

function parameter(p: Json): Writer {
  if (p.in === 'body') {
    const body = w().string(2, p.name).string(3, p.in).bool(4, p.required);
    if (p.schema) body.message(5, schema(p.schema));
    return w().message(1, w().message(1, body));
  }
  let sub: Writer;
  let which: number;
  if (p.in === 'path') {
    sub = w().bool(1, p.required).string(2, p.in).string(4, p.name).string(5, p.type).bool(19, p.uniqueItems);
    which = 4;
  } else {
    sub = w().bool(1, p.required).string(2, p.in).string(4, p.name).string(6, p.type).bool(20, p.uniqueItems);
    which = 3;
  }
  return w().message(1, w().message(2, w().message(which, sub)));
}

function operation(o: Json): Writer {
  const out = w().strings(1, o.tags).string(5, o.operationId).strings(6, o.produces).strings(7, o.consumes);
  for (const p of o.parameters ?? []) out.message(8, parameter(p));
  const responses = w();
  for (const [code, r] of Object.entries((o.responses ?? {}) as Json)) {
    const resp = w().string(1, r.description);
    if (r.schema) resp.message(2, w().message(1, schema(r.schema)));
    responses.message(1, w().string(1, code).message(2, w().message(1, resp)));
  }
  out.message(9, responses);
  out.strings(10, o.schemes);
  vendorExtensions(13, o, out);
  return out;
}

const PATH_OPS: Array<[string, number]> = [['get', 2], ['put', 3], ['post', 4], ['delete', 5], ['options', 6], ['head', 7], ['patch', 8]];

/** Encodes a swagger 2.0 JSON document as gnostic's openapi_v2.Document. */
export function encodeOpenApiV2Proto(doc: Json): Buffer {
  const out = w().string(1, doc.swagger);
  if (doc.info) out.message(2, w().string(1, doc.info.title).string(2, doc.info.version));
  const paths = w();
  for (const [p, item] of Object.entries((doc.paths ?? {}) as Json)) {
    const pi = w();
    for (const [op, n] of PATH_OPS) if (item[op]) pi.message(n, operation(item[op]));
    for (const prm of item.parameters ?? []) pi.message(9, parameter(prm));
    vendorExtensions(10, item, pi);
    paths.message(2, w().string(1, p).message(2, pi));
  }
  out.message(8, paths);
  const defs = w();
  for (const [name, s] of Object.entries((doc.definitions ?? {}) as Json)) defs.message(1, w().string(1, name).message(2, schema(s)));
  out.message(9, defs);
  for (const req of doc.security ?? []) {
    const sr = w();
    for (const [name, scopes] of Object.entries(req as Json)) sr.message(1, w().string(1, name).message(2, w().strings(1, scopes as string[])));
    out.message(12, sr);
  }
  if (doc.securityDefinitions) {
    const sd = w();
    for (const [name, d] of Object.entries(doc.securityDefinitions as Json)) {
      // only apiKey schemes are used (BearerToken)
      sd.message(1, w().string(1, name).message(2, w().message(2, w().string(1, d.type).string(2, d.name).string(3, d.in))));
    }
    out.message(13, sd);
  }
  return out.bytes();
}
