// Pods: READY, STATUS, RESTARTS and AGE, plus the wide columns IP, NODE, NOMINATED NODE and
// READINESS GATES. STATUS is the kubectl users' summary of phase, init and container
// states and deletion, computed exactly as kube-apiserver 1.33 computes it.
import { col, nameCol, ageCol, type KindPrinter, type PrintedRow, type TableRowCondition } from './types.js';
import { age, int, str, timeOf } from './format.js';
import { humanDuration } from './duration.js';

const SUCCEEDED: TableRowCondition[] = [{ type: 'Completed', status: 'True', reason: 'Succeeded', message: 'The pod ran to completion.' }];
const FAILED: TableRowCondition[] = [{ type: 'Completed', status: 'True', reason: 'Failed', message: 'The pod ran and failed.' }];

function isSidecar(c: any): boolean {
  return c?.restartPolicy === 'Always';
}

function conditionTrue(conditions: any[], type: string): boolean {
  const c = conditions.find((x) => x?.type === type);
  return c?.status === 'True';
}

function terminatedReason(t: any, prefix: string): string {
  if (t.reason) return prefix + t.reason;
  if (int(t.signal) !== 0) return `${prefix}Signal:${int(t.signal)}`;
  return `${prefix}ExitCode:${int(t.exitCode)}`;
}

export function podRow(pod: any, now: number): PrintedRow {
  const spec = pod?.spec ?? {};
  const status = pod?.status ?? {};
  const conditions: any[] = Array.isArray(status.conditions) ? status.conditions : [];
  const containers: any[] = Array.isArray(spec.containers) ? spec.containers : [];
  const initContainers: any[] = Array.isArray(spec.initContainers) ? spec.initContainers : [];
  const initStatuses: any[] = Array.isArray(status.initContainerStatuses) ? status.initContainerStatuses : [];
  const statuses: any[] = Array.isArray(status.containerStatuses) ? status.containerStatuses : [];
  const phase = str(status.phase);

  let restarts = 0;
  let sidecarRestarts = 0;
  let total = containers.length;
  let ready = 0;
  let lastRestart = 0;
  let lastSidecarRestart = 0;
  let reason = str(status.reason) || phase;
  for (const c of conditions) if (c?.type === 'PodScheduled' && c?.reason === 'SchedulingGated') reason = 'SchedulingGated';

  const initByName = new Map<string, any>();
  for (const c of initContainers) {
    initByName.set(str(c?.name), c);
    // Sidecars (restartable init containers) count among the pod's containers.
    if (isSidecar(c)) total++;
  }

  let initializing = false;
  for (let i = 0; i < initStatuses.length; i++) {
    const cs = initStatuses[i] ?? {};
    const sidecar = isSidecar(initByName.get(str(cs.name)));
    restarts += int(cs.restartCount);
    const finished = timeOf(cs.lastState?.terminated?.finishedAt);
    if (cs.lastState?.terminated && finished > lastRestart) lastRestart = finished;
    if (sidecar) {
      sidecarRestarts += int(cs.restartCount);
      if (cs.lastState?.terminated && finished > lastSidecarRestart) lastSidecarRestart = finished;
    }
    const st = cs.state ?? {};
    if (st.terminated && int(st.terminated.exitCode) === 0) continue;
    if (sidecar && cs.started === true) {
      if (cs.ready === true) ready++;
      continue;
    }
    if (st.terminated) reason = terminatedReason(st.terminated, 'Init:');
    else if (st.waiting && str(st.waiting.reason) !== '' && st.waiting.reason !== 'PodInitializing') reason = 'Init:' + st.waiting.reason;
    else reason = `Init:${i}/${initContainers.length}`;
    initializing = true;
    break;
  }

  if (!initializing || conditionTrue(conditions, 'Initialized')) {
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let hasRunning = false;
    for (let i = statuses.length - 1; i >= 0; i--) {
      const cs = statuses[i] ?? {};
      restarts += int(cs.restartCount);
      const finished = timeOf(cs.lastState?.terminated?.finishedAt);
      if (cs.lastState?.terminated && finished > lastRestart) lastRestart = finished;
      const st = cs.state ?? {};
      if (st.waiting && str(st.waiting.reason) !== '') reason = st.waiting.reason;
      else if (st.terminated && str(st.terminated.reason) !== '') reason = st.terminated.reason;
      else if (st.terminated) reason = terminatedReason(st.terminated, '');
      else if (cs.ready === true && st.running) {
        hasRunning = true;
        ready++;
      }
    }
    // A container that completed while another still runs leaves the pod running.
    if (reason === 'Completed' && hasRunning) reason = conditionTrue(conditions, 'Ready') ? 'Running' : 'NotReady';
  }

  const deleting = !!pod?.metadata?.deletionTimestamp;
  if (deleting && status.reason === 'NodeLost') reason = 'Unknown';
  else if (deleting && phase !== 'Succeeded' && phase !== 'Failed') reason = 'Terminating';

  let restartCell = String(restarts);
  if (restarts !== 0 && lastRestart !== 0) restartCell = `${restarts} (${humanDuration(now - lastRestart)} ago)`;

  const ip = str(status.podIP) || str(status.podIPs?.[0]?.ip) || '<none>';
  const node = str(spec.nodeName) || '<none>';
  const nominated = str(status.nominatedNodeName) || '<none>';
  let gates = '<none>';
  const readinessGates: any[] = Array.isArray(spec.readinessGates) ? spec.readinessGates : [];
  if (readinessGates.length > 0) {
    let trueCount = 0;
    for (const g of readinessGates) {
      const c = conditions.find((x) => x?.type === g?.conditionType);
      if (c?.status === 'True') trueCount++;
    }
    gates = `${trueCount}/${readinessGates.length}`;
  }

  const row: PrintedRow = {
    cells: [str(pod?.metadata?.name), `${ready}/${total}`, reason, restartCell, age(pod, now), ip, node, nominated, gates],
  };
  if (phase === 'Succeeded') row.conditions = SUCCEEDED;
  else if (phase === 'Failed') row.conditions = FAILED;
  return row;
}

export const podPrinter: KindPrinter = {
  columns: [
    nameCol(),
    col('Ready', 'string', 'Containers ready out of all containers of the pod.'),
    col('Status', 'string', 'Summary of the pod phase and its containers\' states.'),
    col('Restarts', 'string', 'Restarts of the pod\'s containers, and how long ago the latest one was.'),
    ageCol(),
    col('IP', 'string', 'The pod\'s first IP address.', 1),
    col('Node', 'string', 'The node the pod is bound to.', 1),
    col('Nominated Node', 'string', 'The node a preempting pod expects to be scheduled on.', 1),
    col('Readiness Gates', 'string', 'Readiness gate conditions that are true, out of all gates.', 1),
  ],
  row: podRow,
};
