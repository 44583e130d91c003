// Writing answers: JSON bodies, Status errors, plain text. Warnings collected while
// handling the request leave as one `Warning: 299 - "..."` header each.
import { gzip } from 'node:zlib';
import type { ApiRequest, HeaderList, ResponseSink } from './types.js';
import { StatusError, toStatusError } from '../errors.js';
import { features } from '../features.js';
import { negotiateError } from '../codec/negotiate.js';
import { encodeStatus } from '../codec/representation.js';

/** kube-apiserver compresses a response only above this size (its defaultGzipThresholdBytes). */
export const GZIP_THRESHOLD_BYTES = 128 * 1024;

/** The client takes gzip (an exact `gzip` token, as kube checks it) and the gate is on. */
export function wantsGzip(req: ApiRequest | null): boolean {
  const ae = req?.headers['accept-encoding'];
  if (!ae) return false;
  if (!ae.split(',').some((t) => t.trim() === 'gzip')) return false;
  return features.enabled('APIResponseCompression');
}

const JSON_TYPE = 'application/json';

/** The headers of a plain JSON answer, shared by every response that adds none (never mutate). */
const PLAIN_JSON_HEADERS: HeaderList = [
  ['Cache-Control', 'no-cache, private'],
  ['Content-Type', JSON_TYPE],
];

export function baseHeaders(req: ApiRequest | null, contentType: string): HeaderList {
  const h: HeaderList = [
    ['Cache-Control', 'no-cache, private'],
    ['Content-Type', contentType],
  ];
  if (req?.warnings) for (const w of req.warnings) h.push(['Warning', `299 - ${JSON.stringify(w)}`]);
  return h;
}

export function sendBody(req: ApiRequest | null, res: ResponseSink, code: number, contentType: string, body: string | Uint8Array, extra?: HeaderList): void {
  if (res.aborted) return;
  if (contentType === JSON_TYPE && !extra && !req?.warnings?.length && body.length <= GZIP_THRESHOLD_BYTES) {
    res.send(code, PLAIN_JSON_HEADERS, body);
    return;
  }
  const h = baseHeaders(req, contentType);
  if (extra) h.push(...extra);
  if (body.length > GZIP_THRESHOLD_BYTES && wantsGzip(req)) {
    // Compressed off the front thread (zlib's pool), at kube's level 1: cheap, nearly as small.
    gzip(body, { level: 1 }, (err, zipped) => {
      if (res.aborted) return;
      if (err) return res.send(code, h, body);
      h.push(['Content-Encoding', 'gzip'], ['Vary', 'Accept-Encoding']);
      res.send(code, h, zipped);
    });
    return;
  }
  res.send(code, h, body);
}

export function sendJson(req: ApiRequest | null, res: ResponseSink, code: number, body: string | Uint8Array, extra?: HeaderList): void {
  sendBody(req, res, code, JSON_TYPE, body, extra);
}

export function sendText(res: ResponseSink, code: number, text: string, contentType = 'text/plain; charset=utf-8'): void {
  if (res.aborted) return;
  res.send(code, [['Content-Type', contentType], ['X-Content-Type-Options', 'nosniff']], text);
}

export function sendError(req: ApiRequest | null, res: ResponseSink, err: unknown): void {
  const se = toStatusError(err);
  // An unexpected error is kube's handler panic: the audit record ends at the Panic stage.
  if (req?.audit !== undefined && !(err instanceof StatusError)) req.audit.panicked(err);
  if (se.code >= 500 && se.code !== 503 && se.code !== 504) console.error('internal error:', err);
  const extra: HeaderList = [];
  if (se.headers) for (const [k, v] of Object.entries(se.headers)) extra.push([k, v]);
  if (se.plainText !== undefined) {
    if (res.aborted) return;
    res.send(se.code, [['Content-Type', 'text/plain; charset=utf-8'], ['X-Content-Type-Options', 'nosniff'], ...extra], se.plainText);
    return;
  }
  // The Status goes out in the type the client asked for, or JSON when none fits.
  const r = negotiateError(req?.headers['accept']);
  sendBody(req, res, se.code, r.mediaType, encodeStatus(se.toStatus(), r.mediaType), extra);
}

/** A JSON body made of parts (a list's header, items and tail), sent without joining them. */
export function sendJsonParts(req: ApiRequest | null, res: ResponseSink, code: number, parts: Uint8Array[]): void {
  if (res.aborted) return;
  res.sendParts(code, req?.warnings?.length ? baseHeaders(req, JSON_TYPE) : PLAIN_JSON_HEADERS, parts);
}
