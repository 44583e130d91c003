// kube's semver library at version 1 (apiserver/pkg/cel/library/semverlib.go): semver(),
// isSemver() (each with an optional normalize flag), and major, minor, patch, isLessThan,
// isGreaterThan, compareTo. Build metadata is ignored in comparisons (as blang/semver does).
import type { Environment } from '@marcbachmann/cel-js';
import { def, fail } from './def.js';

export class Semver {
  static celTypeName = 'kubernetes.Semver';
  constructor(
    readonly major: bigint,
    readonly minor: bigint,
    readonly patch: bigint,
    readonly pre: string[],
  ) {}
  compareTo(o: Semver): bigint {
    for (const k of ['major', 'minor', 'patch'] as const) if (this[k] !== o[k]) return this[k] < o[k] ? -1n : 1n;
    if (!this.pre.length || !o.pre.length) return this.pre.length === o.pre.length ? 0n : this.pre.length ? -1n : 1n;
    for (let i = 0; i < Math.min(this.pre.length, o.pre.length); i++) {
      const a = this.pre[i];
      const b = o.pre[i];
      if (a === b) continue;
      const na = /^\d+$/.test(a);
      const nb = /^\d+$/.test(b);
      if (na && nb) return BigInt(a) < BigInt(b) ? -1n : 1n;
      if (na !== nb) return na ? -1n : 1n;
      return a < b ? -1n : 1n;
    }
    return this.pre.length === o.pre.length ? 0n : this.pre.length < o.pre.length ? -1n : 1n;
  }
  equals(o: unknown): boolean {
    return o instanceof Semver && this.compareTo(o) === 0n;
  }
}

const NUM = '(0|[1-9]\\d*)';
const STRICT = new RegExp(`^${NUM}\\.${NUM}\\.${NUM}(?:-([0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*))?(?:\\+([0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*))?$`);

function parse(s: string, normalize: boolean): Semver | null {
  let v = s;
  if (normalize) {
    if (v.startsWith('v')) v = v.slice(1);
    const m = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?(.*)$/.exec(v);
    if (!m) return null;
    const strip = (x: string | undefined) => String(BigInt(x ?? '0'));
    v = `${strip(m[1])}.${strip(m[2])}.${strip(m[3])}${m[4]}`;
  }
  const m = STRICT.exec(v);
  if (!m) return null;
  const pre = m[4] ? m[4].split('.') : [];
  if (pre.some((p) => /^0\d+$/.test(p))) return null;
  return new Semver(BigInt(m[1]), BigInt(m[2]), BigInt(m[3]), pre);
}

export function registerSemver(env: Environment): void {
  env.registerType('Semver', Semver as any);
  const make = (s: string, n: boolean) => parse(s, n) ?? fail(`could not parse semver: ${s}`);
  def(env, 'semver(string): Semver', (s: string) => make(s, false));
  def(env, 'semver(string, bool): Semver', (s: string, n: boolean) => make(s, n));
  def(env, 'isSemver(string): bool', (s: string) => parse(s, false) !== null);
  def(env, 'isSemver(string, bool): bool', (s: string, n: boolean) => parse(s, n) !== null);
  def(env, 'Semver.major(): int', (v: Semver) => v.major);
  def(env, 'Semver.minor(): int', (v: Semver) => v.minor);
  def(env, 'Semver.patch(): int', (v: Semver) => v.patch);
  def(env, 'Semver.isLessThan(Semver): bool', (a: Semver, b: Semver) => a.compareTo(b) < 0n);
  def(env, 'Semver.isGreaterThan(Semver): bool', (a: Semver, b: Semver) => a.compareTo(b) > 0n);
  def(env, 'Semver.compareTo(Semver): int', (a: Semver, b: Semver) => a.compareTo(b));
}
