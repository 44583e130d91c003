// The field manager of a write (spec 4.4 fieldManager, 4.9): the `fieldManager` parameter,
// or else the User-Agent's product name, and the hook that records the write's field
// ownership in metadata.managedFields.
import { errors } from '../errors.js';
import { recordUpdate, type ManagedContext, type WriteIdentity } from '../registry/apply.js';
import { ANY, rootNode } from '../registry/schema-walk.js';
import { customSchemaOf } from '../api/custom-resources.js';
import type { FieldsHook, ResourceTarget } from '../registry/store.js';
import { withEscalationCheck } from '../auth/rbac/escalation.js';
import type { FieldError } from '../registry/strategy.js';
import { apiVersionOf, type HandlerContext } from './context.js';

/** kube-apiserver's limit on fieldManager (and the User-Agent prefix taken in its place). */
export const FIELD_MANAGER_MAX_LENGTH = 128;

function printable(ch: string): boolean {
  const cp = ch.codePointAt(0)!;
  return !(cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) && !/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Co}\p{Cn}]/u.test(ch) && !(/\s/.test(ch) && ch !== ' ');
}

/** The product part of a User-Agent ("kubectl/v1.33.0 (linux/amd64) ..." -> "kubectl"), printable, at most 128 characters. */
export function prefixFromUserAgent(ua: string): string {
  let out = '';
  for (const ch of ua.split('/')[0]) {
    if (!printable(ch)) continue;
    if (out.length >= FIELD_MANAGER_MAX_LENGTH) break;
    out += ch;
  }
  return out;
}

export type OptionsKind = 'CreateOptions' | 'UpdateOptions' | 'PatchOptions';

/** Checks the fieldManager parameter as kube-apiserver's ValidateFieldManager does: 422 on the options kind. */
export function validateFieldManager(kind: OptionsKind, fm: string, extra?: FieldError[]): void {
  if (fm === '' && !extra?.length) return; // the usual request: nothing to check
  const errs: FieldError[] = extra ? [...extra] : [];
  if (fm !== '') {
    if ([...fm].length > FIELD_MANAGER_MAX_LENGTH) errs.push({ field: 'fieldManager', type: 'FieldValueTooLong', detail: `may not be more than ${FIELD_MANAGER_MAX_LENGTH} bytes` });
    [...fm].forEach((ch, i) => {
      if (!printable(ch)) {
        const cp = ch.codePointAt(0)!;
        errs.push({ field: 'fieldManager', type: 'FieldValueInvalid', value: fm, detail: `invalid character U+${cp.toString(16).toUpperCase().padStart(4, '0')} (at position ${i})` });
      }
    });
  }
  if (errs.length) throw errors.invalid(kind, 'meta.k8s.io', '', errs);
}

/**
 * prefixFromUserAgent per User-Agent seen: clients send the same one on every request, and
 * the check runs two regular expressions per character. Bounded; cleared when full.
 */
const managerByAgent = new Map<string, string>();
function managerOfAgent(ua: string): string {
  let m = managerByAgent.get(ua);
  if (m === undefined) {
    m = prefixFromUserAgent(ua);
    if (managerByAgent.size >= 256) managerByAgent.clear();
    managerByAgent.set(ua, m);
  }
  return m;
}

export function writeIdentity(c: HandlerContext, kind: OptionsKind): WriteIdentity {
  const fm = c.req.query.get('fieldManager') ?? '';
  validateFieldManager(kind, fm);
  return {
    manager: fm || managerOfAgent(c.req.headers['user-agent'] ?? ''),
    apiVersion: apiVersionOf(c.target),
    subresource: c.info.subresource ?? '',
  };
}

/** The contexts of built-in kinds, whose schema never changes: one per target. */
const builtinContexts = new WeakMap<ResourceTarget, ManagedContext>();

export function managedContext(t: ResourceTarget): ManagedContext {
  const known = builtinContexts.get(t);
  if (known) return known;
  const builtin = rootNode(t.info.group, t.info.version, t.info.kind);
  // Custom resources: their CRD schema's view (list types as declared, atomic otherwise),
  // looked up on every write since the CRD may change.
  const root = builtin ?? customSchemaOf(t.info.group, t.info.version, t.info.kind)?.root ?? ANY;
  const ctx: ManagedContext = { root, hasStatus: t.hasStatus, statusReset: t.strategy.statusResetFields };
  if (builtin) builtinContexts.set(t, ctx);
  return ctx;
}

/** The hook that records an Update by this request's manager. */
export function updateHook(c: HandlerContext, kind: OptionsKind): FieldsHook {
  const id = writeIdentity(c, kind);
  const ctx = managedContext(c.target);
  // RBAC kinds: the escalation check runs on the object as it will be stored.
  return withEscalationCheck(c, (old, obj) => recordUpdate(old, obj, id, ctx));
}
