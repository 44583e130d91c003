// The reinvocation bookkeeping of a mutating chain, one per request (kube's
// webhookReinvokeContext and policyReinvokeContext, which keep the same three facts): a
// mutator with reinvocationPolicy IfNeeded runs again in the second pass only when something
// after it changed the object.
//
// Thread ownership: per request, on the thread that admits it.

export interface ReinvokeState {
  /** the object as these mutators last left it, to see whether later steps changed it */
  lastOutput?: any;
  /** IfNeeded invocations run since the last change */
  previouslyInvoked: Set<string>;
  /** invocations to run again in the reinvocation pass */
  reinvoke: Set<string>;
}

export function newReinvokeState(): ReinvokeState {
  return { previouslyInvoked: new Set(), reinvoke: new Set() };
}

/** The object changed: every IfNeeded invocation so far runs again. */
export function requireReinvoking(st: ReinvokeState): void {
  for (const k of st.previouslyInvoked) st.reinvoke.add(k);
  st.previouslyInvoked.clear();
}
