// The audit.k8s.io/v1 Event: its shape (field order as kube-apiserver writes it), the
// MicroTime timestamps, and the one-line "legacy" text format.
import type { Level, Stage } from './policy.js';

export interface AuditUser {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface ObjectReference {
  resource?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  apiGroup?: string;
  apiVersion?: string;
  resourceVersion?: string;
  subresource?: string;
}

/** The bounded part of a Status kept as responseStatus (metadata, status, message, reason, details, code). */
export interface ResponseStatus {
  metadata: Record<string, never>;
  status?: string;
  message?: string;
  reason?: string;
  details?: unknown;
  code: number;
}

export interface AuditEvent {
  kind: 'Event';
  apiVersion: string;
  level: Level;
  auditID: string;
  stage: Stage;
  requestURI: string;
  verb: string;
  user: AuditUser;
  impersonatedUser?: AuditUser;
  sourceIPs?: string[];
  userAgent?: string;
  objectRef?: ObjectReference;
  responseStatus?: ResponseStatus;
  requestObject?: unknown;
  responseObject?: unknown;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  annotations?: Record<string, string>;
}

export const AUDIT_API_VERSION = 'audit.k8s.io/v1';

/**
 * Now as a metav1.MicroTime: RFC 3339 in UTC with six fractional digits. Date has only
 * milliseconds; the microseconds come from the monotonic clock's fraction.
 */
export function microNow(): string {
  const t = performance.timeOrigin + performance.now();
  const ms = Math.floor(t);
  const us = Math.floor((t - ms) * 1000);
  const iso = new Date(ms).toISOString(); // 2006-01-02T15:04:05.000Z
  return `${iso.slice(0, 23)}${String(us).padStart(3, '0')}Z`;
}

/** Go's %q for the legacy line: a double-quoted string with Go's escapes (JSON's are close enough for text). */
function q(s: string): string {
  return JSON.stringify(s);
}

function quotedList(list: string[]): string {
  return list.map(q).join(',');
}

/** The legacy format (--audit-log-format=legacy): one line of key=value pairs per event, as kube writes it. */
export function legacyLine(ev: AuditEvent): string {
  let username = '<none>';
  let groups = '<none>';
  if (ev.user.username) {
    username = ev.user.username;
    if (ev.user.groups?.length) groups = quotedList(ev.user.groups);
  }
  let as = '<self>';
  let asGroups = '<lookup>';
  if (ev.impersonatedUser) {
    as = ev.impersonatedUser.username ?? '';
    if (ev.impersonatedUser.groups) asGroups = quotedList(ev.impersonatedUser.groups);
  }
  const namespace = ev.objectRef?.namespace || '<none>';
  const response = ev.responseStatus ? String(ev.responseStatus.code) : '<deferred>';
  const ip = ev.sourceIPs?.[0] ?? '<unknown>';
  return (
    `${ev.requestReceivedTimestamp.replace(/\.?0+Z$/, 'Z')} AUDIT: id=${q(ev.auditID)} stage=${q(ev.stage)} ip=${q(ip)} method=${q(ev.verb)} ` +
    `user=${q(username)} groups=${q(groups)} as=${q(as)} asgroups=${q(asGroups)} user-agent=${q(ev.userAgent ?? '')} namespace=${q(namespace)} uri=${q(ev.requestURI)} response="${response}"`
  );
}

/** Drops metadata.managedFields from an object, or from every item of a list (omitManagedFields). */
export function withoutManagedFields(obj: unknown): unknown {
  if (!obj || typeof obj !== 'object') return obj;
  const o = obj as Record<string, any>;
  if (Array.isArray(o.items)) {
    return { ...o, items: o.items.map((it: unknown) => withoutManagedFields(it)) };
  }
  const md = o.metadata;
  if (md && typeof md === 'object' && 'managedFields' in md) {
    const { managedFields: _drop, ...rest } = md;
    return { ...o, metadata: rest };
  }
  return obj;
}
