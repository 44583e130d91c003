// Continue tokens of chunked lists (kube's pkg/storage/continue.go: EncodeContinue,
// DecodeContinue). A token comes back from any client, so decoding must refuse anything
// that is not one of ours with kube's 400 ("invalid continue token"), never throw otherwise.
import { errors } from '../errors.js';

/**
 * The continue token, shaped as kube-apiserver's (base64url of {"v","rv","start"}) plus
 * the time the list began, so that it expires after CONTINUE_TTL_MS (spec 3.2) even while
 * the history it points at is still retained. rv -1 means "go on at the latest version".
 */
export interface ContinueToken {
  v: 'meta.k8s.io/v1';
  rv: number;
  start: string;
  t?: number;
}

export function encodeContinue(rv: number, start: string, t = Date.now()): string {
  const tok: ContinueToken = { v: 'meta.k8s.io/v1', rv, start, t };
  return Buffer.from(JSON.stringify(tok)).toString('base64url');
}

export function decodeContinue(s: string): ContinueToken {
  const bad = (why: string) => errors.badRequest(`invalid continue token: continue key is not valid: ${why}`);
  let tok: ContinueToken;
  try {
    tok = JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as ContinueToken;
  } catch {
    throw bad('illegal base64 data');
  }
  if (tok === null || typeof tok !== 'object' || tok.v !== 'meta.k8s.io/v1') throw bad('server does not recognize this encoded version');
  if (typeof tok.rv !== 'number' || !Number.isSafeInteger(tok.rv) || tok.rv === 0) throw bad('incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  if (typeof tok.start !== 'string' || tok.start === '' || tok.start.includes('/../')) throw bad('continue key is not valid');
  // the list's start time, which the store subtracts from now: a number or nothing
  if (tok.t !== undefined && (typeof tok.t !== 'number' || !Number.isFinite(tok.t))) throw bad('continue key is not valid');
  return tok;
}
