// The chain of authorization modes (kube's authorizer/union.New over the modes that
// --authorization-mode or --authorization-config names). Each mode answers Allow, Deny or
// NoOpinion; Allow and Deny end the chain with that mode's reason, NoOpinion passes on with
// its reason kept; when no mode decides, the request is refused with the reasons joined by
// newlines (the 403 message) and the modes' errors aggregated.
//
// Synchronous while the modes are: RBAC, AlwaysAllow, AlwaysDeny, ABAC, and a webhook whose
// answer is cached return plain values, and so does decide(); only a mode that must call out
// turns the rest of the chain into a promise.
//
// Thread ownership: the front thread that built it (the modes' caches are per thread).
import type { AuthorizerMode, AuthorizerResult } from './authorizer.js';
import type { AuthorizationAttributes, Decision, Rules } from './attributes.js';
import type { UserInfo } from './user.js';
import { aggregate } from './rbac/resolver.js';

function isPromise<T>(x: T | Promise<T>): x is Promise<T> {
  return typeof (x as any)?.then === 'function';
}

function settle(r: AuthorizerResult): Decision {
  // (no spreads: this is on every request's path)
  const d: Decision = { allowed: r.decision === 'Allow', reason: r.reason };
  if (r.decision === 'Deny') d.denied = true;
  if (r.error) d.error = r.error;
  return d;
}

export class AuthorizerUnion {
  /** the decision when every mode is fixed (none then looks at the request), else null */
  readonly fixed: Decision | null;
  /** the modes' names, in order */
  modeNames: string[];
  /** stops watching a reloaded configuration */
  onClose?: () => void;

  constructor(
    public modes: AuthorizerMode[],
    opts: { reloadable?: boolean } = {},
  ) {
    this.modeNames = modes.map((m) => m.name);
    // a chain that may be replaced is never decided once
    this.fixed = !opts.reloadable && modes.every((m) => m.fixed) ? this.decideSync({} as AuthorizationAttributes) : null;
  }

  /** Swaps in a new chain (--authorization-config reloaded); requests in flight finish on the old one. */
  replace(modes: AuthorizerMode[]): void {
    this.modes = modes;
    this.modeNames = modes.map((m) => m.name);
  }

  /** kube's union Authorize: a plain Decision when every mode answered synchronously. */
  decide(a: AuthorizationAttributes): Decision | Promise<Decision> {
    return this.run(this.modes, a, 0, null, null);
  }

  // (the chain a request started on carries through its awaits, even if a reload replaces it)
  private run(modes: AuthorizerMode[], a: AuthorizationAttributes, from: number, reasons: string[] | null, errs: string[] | null): Decision | Promise<Decision> {
    for (let i = from; i < modes.length; i++) {
      const r = modes[i].authorize(a);
      if (isPromise(r)) return r.then((res) => this.step(modes, a, i, res, reasons, errs), (e) => this.step(modes, a, i, { decision: 'NoOpinion', reason: '', error: String(e?.message ?? e) }, reasons, errs));
      if (r.error) (errs ??= []).push(r.error);
      if (r.decision !== 'NoOpinion') return settle(r);
      if (r.reason) (reasons ??= []).push(r.reason);
    }
    return this.none(reasons, errs);
  }

  private step(modes: AuthorizerMode[], a: AuthorizationAttributes, i: number, r: AuthorizerResult, reasons: string[] | null, errs: string[] | null): Decision | Promise<Decision> {
    if (r.error) (errs ??= []).push(r.error);
    if (r.decision !== 'NoOpinion') return settle(r);
    if (r.reason) (reasons ??= []).push(r.reason);
    return this.run(modes, a, i + 1, reasons, errs);
  }

  private none(reasons: string[] | null, errs: string[] | null): Decision {
    return { allowed: false, reason: reasons ? reasons.join('\n') : '', ...(errs ? { error: aggregate(errs) } : {}) };
  }

  /**
   * For callers that cannot wait (CEL's authorizer inside an expression, RBAC's escalation
   * checks inside a store write): a mode that would have to call out (a webhook without a
   * cached answer) counts as NoOpinion, with a reason saying so; its call still runs and
   * fills the cache for the next time.
   */
  decideSync(a: AuthorizationAttributes): Decision {
    let reasons: string[] | null = null;
    let errs: string[] | null = null;
    for (const mode of this.modes) {
      let r = mode.authorize(a);
      if (isPromise(r)) {
        r.catch(() => undefined);
        r = { decision: 'NoOpinion', reason: `${mode.name}: no answer yet` };
      }
      if (r.error) (errs ??= []).push(r.error);
      if (r.decision !== 'NoOpinion') return settle(r);
      if (r.reason) (reasons ??= []).push(r.reason);
    }
    return this.none(reasons, errs);
  }

  /**
   * What a user may do in a namespace (kube's union RulesFor, behind SelfSubjectRulesReview):
   * the rules of every mode that can list them, in order; a mode that cannot makes the
   * answer incomplete.
   */
  rulesFor(user: UserInfo, namespace: string): Rules {
    const out: Rules = { resourceRules: [], nonResourceRules: [], incomplete: false };
    const errs: string[] = [];
    for (const mode of this.modes) {
      // a mode that cannot list rules adds none (it says so itself when that matters)
      if (!mode.rulesFor) continue;
      const r = mode.rulesFor(user, namespace);
      out.resourceRules.push(...r.resourceRules);
      out.nonResourceRules.push(...r.nonResourceRules);
      if (r.incomplete) out.incomplete = true;
      if (r.evaluationError) errs.push(r.evaluationError);
    }
    if (errs.length) out.evaluationError = aggregate(errs);
    return out;
  }
}
