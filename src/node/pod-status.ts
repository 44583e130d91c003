// A pod's status from what the runtime says of its containers (kubelet's
// generateAPIPodStatus, getPhase, and the status manager's condition generators): phase,
// containerStatuses, the pod's conditions with their transition times kept, the node's IP
// as hostIP and podIP (pods share the host network here), startTime.
//
// Thread ownership: pure functions, called from the agent's main thread.
import type { ContainerRuntimeStatus } from './runtime.js';

const rfc3339 = (d = new Date()) => d.toISOString().replace(/\.\d+Z$/, 'Z');

export function isTerminal(pod: any): boolean {
  return pod?.status?.phase === 'Succeeded' || pod?.status?.phase === 'Failed';
}

/** One container's API status. */
function containerStatus(spec: any, rt: ContainerRuntimeStatus | undefined, waitingReason = 'ContainerCreating'): any {
  const s: any = { name: spec.name, image: spec.image ?? '', imageID: '', ready: false, restartCount: rt?.restartCount ?? 0, started: false, state: {}, lastState: {} };
  if (!rt) {
    s.state = { waiting: { reason: waitingReason } };
    return s;
  }
  if (rt.containerID) s.containerID = rt.containerID;
  if (rt.state === 'running') {
    s.state = { running: { startedAt: rt.startedAt } };
    s.started = true;
    s.ready = rt.ready;
  } else if (rt.state === 'terminated') {
    s.state = { terminated: { exitCode: rt.exitCode ?? 0, reason: rt.reason, ...(rt.message ? { message: rt.message } : {}), startedAt: rt.startedAt ?? null, finishedAt: rt.finishedAt ?? null, ...(rt.containerID ? { containerID: rt.containerID } : {}) } };
  } else {
    s.state = { waiting: { reason: rt.reason ?? 'ContainerCreating', ...(rt.message ? { message: rt.message } : {}) } };
  }
  if (rt.lastTerminated) {
    const l = rt.lastTerminated;
    s.lastState = { terminated: { exitCode: l.exitCode, reason: l.reason, startedAt: l.startedAt ?? null, finishedAt: l.finishedAt ?? null, ...(l.containerID ? { containerID: l.containerID } : {}) } };
  }
  return s;
}

/** kubelet's getPhase over the containers' statuses. */
export function podPhase(pod: any, statuses: any[]): string {
  const policy = pod.spec?.restartPolicy ?? 'Always';
  let waiting = 0;
  let running = 0;
  let succeeded = 0;
  let failed = 0;
  for (const s of statuses) {
    if (s.state.running) running++;
    else if (s.state.terminated) s.state.terminated.exitCode === 0 ? succeeded++ : failed++;
    else if (s.lastState.terminated) running++; // waiting to restart: counts as still going
    else waiting++;
  }
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (statuses.length === 0) return 'Pending';
  if (policy === 'Always') return 'Running';
  if (policy === 'OnFailure') return failed > 0 ? 'Running' : 'Succeeded';
  return failed > 0 ? 'Failed' : 'Succeeded';
}

function condition(prev: any[] | undefined, type: string, status: 'True' | 'False', now: string, reason?: string, message?: string): any {
  const old = prev?.find((c) => c.type === type);
  return { type, status, lastProbeTime: null, lastTransitionTime: old && old.status === status ? old.lastTransitionTime : now, ...(reason ? { reason } : {}), ...(message ? { message } : {}) };
}

/** The status the agent writes for a pod. */
export function podStatus(pod: any, rts: ContainerRuntimeStatus[] | undefined, nodeIP: string, startTime: string | undefined): any {
  const prev = pod.status ?? {};
  const now = rfc3339();
  const specs: any[] = pod.spec?.containers ?? [];
  const initSpecs: any[] = pod.spec?.initContainers ?? [];
  const find = (name: string) => rts?.find((r) => r.name === name);
  // init containers: done when exited 0 (a sidecar, restartPolicy Always: once started)
  const initStatuses = initSpecs.map((c) => containerStatus(c, find(c.name), 'PodInitializing'));
  const initDone = (c: any, st: any) => (c.restartPolicy === 'Always' ? st.started || !!st.state.running : st.state.terminated?.exitCode === 0);
  const incomplete = initSpecs.filter((c, i) => !initDone(c, initStatuses[i])).map((c) => c.name);
  const initFailedForGood = (pod.spec?.restartPolicy ?? 'Always') === 'Never' && initSpecs.some((c, i) => c.restartPolicy !== 'Always' && initStatuses[i].state.terminated && initStatuses[i].state.terminated.exitCode !== 0);
  const statuses = specs.map((c) => containerStatus(c, find(c.name), incomplete.length ? 'PodInitializing' : 'ContainerCreating'));
  const phase = initFailedForGood ? 'Failed' : incomplete.length ? 'Pending' : podPhase(pod, statuses);
  const terminal = phase === 'Succeeded' || phase === 'Failed';
  const unready = statuses.filter((s) => !s.ready).map((s) => s.name);
  const prevConds: any[] | undefined = prev.conditions;
  let readyReason: string | undefined;
  let readyMessage: string | undefined;
  if (terminal) readyReason = phase === 'Succeeded' ? 'PodCompleted' : 'PodFailed';
  else if (unready.length) {
    readyReason = 'ContainersNotReady';
    readyMessage = `containers with unready status: [${unready.join(' ')}]`;
  }
  const ready = !terminal && unready.length === 0;
  const conditions = [
    // a finished pod's sandbox is gone (kubelet kills it), so it is not ready to start containers
    condition(prevConds, 'PodReadyToStartContainers', terminal ? 'False' : 'True', now),
    incomplete.length && !initFailedForGood
      ? condition(prevConds, 'Initialized', 'False', now, 'ContainersNotInitialized', `containers with incomplete status: [${incomplete.join(' ')}]`)
      : condition(prevConds, 'Initialized', 'True', now, phase === 'Succeeded' ? 'PodCompleted' : undefined),
    condition(prevConds, 'Ready', ready ? 'True' : 'False', now, readyReason, readyMessage),
    condition(prevConds, 'ContainersReady', ready ? 'True' : 'False', now, readyReason, readyMessage),
    prevConds?.find((c) => c.type === 'PodScheduled') ?? condition(prevConds, 'PodScheduled', 'True', now),
  ];
  // conditions the agent does not own (readiness gates, DisruptionTarget) are kept
  for (const c of prevConds ?? []) if (!conditions.some((x) => x.type === c.type)) conditions.push(c);
  const status: any = {
    ...prev,
    phase,
    conditions,
    hostIP: nodeIP,
    hostIPs: [{ ip: nodeIP }],
    podIP: nodeIP,
    podIPs: [{ ip: nodeIP }],
    startTime: prev.startTime ?? startTime ?? now,
    containerStatuses: statuses,
  };
  if (initSpecs.length) status.initContainerStatuses = initStatuses;
  delete status.reason;
  delete status.message;
  return status;
}

/** The status without its clock-only parts, to tell whether a write is needed. */
export function podStatusFingerprint(status: any): string {
  const sorted = (v: any): any => (Array.isArray(v) ? v.map(sorted) : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().filter((k) => v[k] !== undefined).map((k) => [k, sorted(v[k])])) : v);
  const conditions = (status?.conditions ?? []).map((c: any) => [c.type, c.status, c.reason ?? '', c.message ?? '']).sort((a: string[], b: string[]) => (a[0] < b[0] ? -1 : 1));
  return JSON.stringify(sorted({ ...status, conditions }));
}
