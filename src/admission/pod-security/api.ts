// The Pod Security Standards' levels, versions and namespace policy, as kube's
// k8s.io/pod-security-admission/api (helpers.go, constants.go) defines them: the labels a
// namespace carries, how they are read into an enforce/audit/warn policy (falling back to the
// configured defaults), and the field errors a bad label value gives.
//
// Thread ownership: none (pure functions and immutable values).
import { goQuote, type CauseType } from '../../errors.js';

export type Level = 'privileged' | 'baseline' | 'restricted';

/** A policy version: `latest`, or v1.<minor>. */
export interface Version {
  latest: boolean;
  minor: number;
}

export interface LevelVersion {
  level: Level;
  version: Version;
}

export interface Policy {
  enforce: LevelVersion;
  audit: LevelVersion;
  warn: LevelVersion;
}

export interface LabelError {
  field: string;
  type: CauseType;
  value: string;
  detail: string;
}

export const LABEL_PREFIX = 'pod-security.kubernetes.io/';
export const ENFORCE_LEVEL_LABEL = 'pod-security.kubernetes.io/enforce';
export const ENFORCE_VERSION_LABEL = 'pod-security.kubernetes.io/enforce-version';
export const AUDIT_LEVEL_LABEL = 'pod-security.kubernetes.io/audit';
export const AUDIT_VERSION_LABEL = 'pod-security.kubernetes.io/audit-version';
export const WARN_LEVEL_LABEL = 'pod-security.kubernetes.io/warn';
export const WARN_VERSION_LABEL = 'pod-security.kubernetes.io/warn-version';

/** Audit annotation keys (api/constants.go), which the plugin prefixes with LABEL_PREFIX. */
export const ENFORCED_POLICY_ANNOTATION = 'enforce-policy';
export const AUDIT_VIOLATIONS_ANNOTATION = 'audit-violations';
export const EXEMPTION_REASON_ANNOTATION = 'exempt';

export const LATEST: Version = Object.freeze({ latest: true, minor: 0 });
export const VALID_LEVELS: readonly Level[] = ['privileged', 'baseline', 'restricted'];

export const minorVersion = (minor: number): Version => ({ latest: false, minor });

export function versionString(v: Version): string {
  return v.latest ? 'latest' : `v1.${v.minor}`;
}

export function levelVersionString(lv: LevelVersion): string {
  return `${lv.level}:${versionString(lv.version)}`;
}

export const sameVersion = (a: Version, b: Version): boolean => a.latest === b.latest && (a.latest || a.minor === b.minor);
export const sameLevelVersion = (a: LevelVersion, b: LevelVersion): boolean => a.level === b.level && sameVersion(a.version, b.version);

/** kube's LevelVersion.Equivalent: privileged at any version is the same policy. */
export const equivalentLevelVersion = (a: LevelVersion, b: LevelVersion): boolean =>
  a.level === b.level && (a.level === 'privileged' || sameVersion(a.version, b.version));

export const fullyPrivileged = (p: Policy): boolean =>
  p.enforce.level === 'privileged' && p.audit.level === 'privileged' && p.warn.level === 'privileged';

export const equivalentPolicy = (a: Policy, b: Policy): boolean =>
  equivalentLevelVersion(a.enforce, b.enforce) && equivalentLevelVersion(a.audit, b.audit) && equivalentLevelVersion(a.warn, b.warn);

/** kube's api.CompareLevels: -1 when a is less strict than b, 0 when equal, +1 when stricter. */
export function compareLevels(a: Level, b: Level): number {
  if (a === b) return 0;
  const rank = { privileged: 0, baseline: 1, restricted: 2 };
  return rank[a] < rank[b] ? -1 : 1;
}

/** kube's api.ParseLevel: an unknown level reads as restricted, with an error. */
export function parseLevel(s: string): { level: Level; err?: string } {
  if (s === 'privileged' || s === 'baseline' || s === 'restricted') return { level: s };
  return { level: 'restricted', err: `must be one of ${VALID_LEVELS.join(', ')}` };
}

const VERSION_RE = /^v1\.(0|[1-9][0-9]*)$/;

/** kube's api.ParseVersion: "latest" or "v1.<minor>"; anything else reads as latest, with an error. */
export function parseVersion(s: string): { version: Version; err?: string } {
  if (s === 'latest') return { version: LATEST };
  const m = VERSION_RE.exec(s);
  const minor = m ? Number(m[1]) : NaN;
  // (Go's strconv.Atoi fails past int64; such a minor is refused as kube refuses it)
  if (!m || !Number.isSafeInteger(minor)) return { version: LATEST, err: 'must be "latest" or "v1.x"' };
  return { version: minorVersion(minor) };
}

export const PRIVILEGED_LATEST: LevelVersion = Object.freeze({ level: 'privileged', version: LATEST }) as LevelVersion;
export const ALL_PRIVILEGED: Policy = Object.freeze({ enforce: PRIVILEGED_LATEST, audit: PRIVILEGED_LATEST, warn: PRIVILEGED_LATEST }) as Policy;

/**
 * kube's api.PolicyToEvaluate: the namespace's labels over the defaults. A policy comes back
 * even with errors: a bad enforce level reads as restricted (fail closed), a bad audit or warn
 * level as privileged (fail open), a bad version as latest.
 */
export function policyToEvaluate(labels: Record<string, string> | undefined, defaults: Policy): { policy: Policy; errs: LabelError[] } {
  if (!labels) return { policy: defaults, errs: [] };
  let errs: LabelError[] | undefined;
  let p: Policy | undefined;
  const fail = (label: string, value: string, detail: string) => {
    (errs ??= []).push({ field: `metadata.labels[${label}]`, type: 'FieldValueInvalid', value, detail });
  };
  const mode = (key: 'enforce' | 'audit' | 'warn', levelLabel: string, versionLabel: string) => {
    const lv = labels[levelLabel];
    const vv = labels[versionLabel];
    if (lv === undefined && vv === undefined) return;
    p ??= { ...defaults };
    let { level, version } = p[key];
    if (lv !== undefined) {
      const r = parseLevel(lv);
      level = r.level;
      if (r.err) {
        fail(levelLabel, lv, r.err);
        if (key !== 'enforce') level = 'privileged';
      }
    }
    if (vv !== undefined) {
      const r = parseVersion(vv);
      version = r.version;
      if (r.err) fail(versionLabel, vv, r.err);
    }
    p[key] = { level, version };
  };
  mode('enforce', ENFORCE_LEVEL_LABEL, ENFORCE_VERSION_LABEL);
  mode('audit', AUDIT_LEVEL_LABEL, AUDIT_VERSION_LABEL);
  mode('warn', WARN_LEVEL_LABEL, WARN_VERSION_LABEL);
  return { policy: p ?? defaults, errs: errs ?? [] };
}

/** field.ErrorList.ToAggregate().Error() for label errors (as the "error" audit annotation shows them). */
export function labelErrorsText(errs: LabelError[]): string {
  const msgs = [...new Set(errs.map((e) => `${e.field}: Invalid value: ${goQuote(e.value)}: ${e.detail}`))];
  return msgs.length === 1 ? msgs[0] : `[${msgs.join(', ')}]`;
}
