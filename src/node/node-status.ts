// What the agent reports about its node (kubelet's pkg/kubelet/nodestatus setters): the
// addresses, capacity and allocatable (from the host, minus reservations and the hard
// eviction thresholds, as kubelet's node allocatable), nodeInfo, daemonEndpoints, and the
// five conditions of spec 2.10 with kubelet's reasons and messages, their
// lastTransitionTime kept while the status holds.
//
// Thread ownership: pure functions, plus host reads (/proc, statfs) on the agent's main thread.
import { cpus, hostname as osHostname, networkInterfaces, release, totalmem } from 'node:os';
import { readFileSync, readdirSync, statfsSync } from 'node:fs';

export const AGENT_VERSION = 'v1.33.0-kubeshard';

/** A resource quantity ("100Mi", "1G", "250m", "2") in base units (bytes, cores). */
export function parseQuantity(q: string | number | undefined): number | undefined {
  if (q === undefined || q === '') return undefined;
  if (typeof q === 'number') return q;
  const m = /^([+-]?\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$/.exec(q.trim());
  if (!m) return undefined;
  const mult: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60, n: 1e-9, u: 1e-6, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };
  return parseFloat(m[1]) * (m[2] ? mult[m[2]] : 1);
}

/** An eviction threshold ("100Mi" or "10%") as bytes of a total. */
function threshold(v: string | undefined, total: number): number {
  if (!v) return 0;
  if (v.endsWith('%')) return (parseFloat(v) / 100) * total;
  return parseQuantity(v) ?? 0;
}

const cpuQuantity = (cores: number) => (Number.isInteger(cores) ? String(cores) : `${Math.round(cores * 1000)}m`);
const kiQuantity = (bytes: number) => `${Math.max(0, Math.floor(bytes / 1024))}Ki`;

function readOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return fallback;
  }
}

/** /proc/meminfo's fields in bytes (MemTotal, MemAvailable, ...). */
function meminfo(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of readOr('/proc/meminfo', '').split('\n')) {
    const m = /^(\w+):\s+(\d+)(?: kB)?/.exec(line);
    if (m) out[m[1]] = Number(m[2]) * 1024;
  }
  return out;
}

function fsStats(path: string): { total: number; avail: number } | undefined {
  try {
    const s = statfsSync(path);
    return { total: s.blocks * s.bsize, avail: s.bavail * s.bsize };
  } catch {
    return undefined;
  }
}

/** The host's first non-internal IPv4 address (kubelet's default node IP), else loopback. */
export function defaultNodeIP(): string {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return '127.0.0.1';
}

export function defaultHostname(): string {
  return osHostname().toLowerCase();
}

export interface NodeSettings {
  nodeName: string;
  hostname: string;
  nodeIP: string;
  port: number;
  rootDir: string;
  maxPods: number;
  systemReserved: Record<string, string>;
  kubeReserved: Record<string, string>;
  evictionHard: Record<string, string>;
  runtimeVersion: string;
  labels: Record<string, string>;
  taints: Array<{ key: string; value?: string; effect: string }>;
  providerID?: string;
}

const ARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x' };

export function nodeLabels(s: NodeSettings): Record<string, string> {
  const arch = ARCH[process.arch] ?? process.arch;
  return {
    'beta.kubernetes.io/arch': arch,
    'beta.kubernetes.io/os': 'linux',
    'kubernetes.io/arch': arch,
    'kubernetes.io/hostname': s.hostname,
    'kubernetes.io/os': 'linux',
    ...s.labels,
  };
}

/** The Node object the agent registers (kubelet's initialNode). */
export function initialNode(s: NodeSettings): any {
  const node: any = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: s.nodeName, labels: nodeLabels(s), annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' } },
    spec: {},
  };
  if (s.taints.length) node.spec.taints = s.taints.map((t) => ({ key: t.key, ...(t.value ? { value: t.value } : {}), effect: t.effect }));
  if (s.providerID) node.spec.providerID = s.providerID;
  return node;
}

export interface Pressure {
  memory: boolean;
  disk: boolean;
  pid: boolean;
}

/** The host's pressures against the hard eviction thresholds (kubelet's eviction manager, reduced). */
export function measurePressure(s: NodeSettings): Pressure {
  const mem = meminfo();
  const memTotal = mem.MemTotal ?? totalmem();
  const memAvail = mem.MemAvailable ?? mem.MemFree ?? memTotal;
  const fs = fsStats(s.rootDir);
  let pid = false;
  const pidMax = Number(readOr('/proc/sys/kernel/pid_max', '0'));
  if (pidMax > 0) {
    let procs = 0;
    try {
      procs = readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length;
    } catch {
      /* no /proc */
    }
    pid = pidMax - procs < threshold(s.evictionHard['pid.available'], pidMax);
  }
  return {
    memory: memAvail < threshold(s.evictionHard['memory.available'], memTotal),
    disk: fs ? fs.avail < threshold(s.evictionHard['nodefs.available'], fs.total) : false,
    pid,
  };
}

/** capacity and allocatable (kubelet's node allocatable: capacity minus reservations and hard eviction). */
export function resources(s: NodeSettings): { capacity: Record<string, string>; allocatable: Record<string, string> } {
  const mem = meminfo();
  const memTotal = mem.MemTotal ?? totalmem();
  const cores = cpus().length || 1;
  const fs = fsStats(s.rootDir);
  const reserved = (k: string) => (parseQuantity(s.systemReserved[k]) ?? 0) + (parseQuantity(s.kubeReserved[k]) ?? 0);
  const capacity: Record<string, string> = { cpu: String(cores), memory: kiQuantity(memTotal), pods: String(s.maxPods), 'hugepages-2Mi': '0', 'hugepages-1Gi': '0' };
  const allocatable: Record<string, string> = {
    cpu: cpuQuantity(Math.max(0, cores - reserved('cpu'))),
    memory: kiQuantity(memTotal - reserved('memory') - threshold(s.evictionHard['memory.available'], memTotal)),
    pods: String(s.maxPods),
    'hugepages-2Mi': '0',
    'hugepages-1Gi': '0',
  };
  if (fs) {
    capacity['ephemeral-storage'] = kiQuantity(fs.total);
    allocatable['ephemeral-storage'] = String(Math.max(0, Math.floor(fs.total - reserved('ephemeral-storage') - threshold(s.evictionHard['nodefs.available'], fs.total))));
  }
  return { capacity, allocatable };
}

export function nodeInfo(s: NodeSettings): Record<string, string> {
  const osRelease = readOr('/etc/os-release', '');
  const pretty = /^PRETTY_NAME="?([^"\n]*)"?/m.exec(osRelease)?.[1] ?? 'Linux';
  return {
    machineID: readOr('/etc/machine-id', ''),
    systemUUID: readOr('/sys/class/dmi/id/product_uuid', ''),
    bootID: readOr('/proc/sys/kernel/random/boot_id', ''),
    kernelVersion: release(),
    osImage: pretty,
    containerRuntimeVersion: s.runtimeVersion,
    kubeletVersion: AGENT_VERSION,
    kubeProxyVersion: '',
    operatingSystem: 'linux',
    architecture: ARCH[process.arch] ?? process.arch,
  };
}

interface CondSpec {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

/** The five conditions (spec 2.10) with kubelet's reasons and messages. */
export function conditionSpecs(p: Pressure, ready: boolean, readyMessage = 'kubelet is posting ready status'): CondSpec[] {
  return [
    p.memory
      ? { type: 'MemoryPressure', status: 'True', reason: 'KubeletHasInsufficientMemory', message: 'kubelet has insufficient memory available' }
      : { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available' },
    p.disk
      ? { type: 'DiskPressure', status: 'True', reason: 'KubeletHasDiskPressure', message: 'kubelet has disk pressure' }
      : { type: 'DiskPressure', status: 'False', reason: 'KubeletHasNoDiskPressure', message: 'kubelet has no disk pressure' },
    p.pid
      ? { type: 'PIDPressure', status: 'True', reason: 'KubeletHasInsufficientPID', message: 'kubelet has insufficient PID available' }
      : { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID', message: 'kubelet has sufficient PID available' },
    // kubelet leaves NetworkUnavailable to the network plugin or route controller; this
    // agent's pods use the host network, so it reports the network available itself
    { type: 'NetworkUnavailable', status: 'False', reason: 'HostNetworkAvailable', message: 'the node agent runs pods in the host network' },
    ready ? { type: 'Ready', status: 'True', reason: 'KubeletReady', message: readyMessage } : { type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: readyMessage },
  ];
}

/** Conditions with times: lastHeartbeatTime now, lastTransitionTime kept unless the status changed. */
export function conditions(specs: CondSpec[], previous: any[] | undefined, now: string): any[] {
  return specs.map((c) => {
    const old = previous?.find((o) => o.type === c.type);
    return { ...c, lastHeartbeatTime: now, lastTransitionTime: old && old.status === c.status ? old.lastTransitionTime : now };
  });
}

/** The node's status as the agent reports it. */
export function nodeStatus(s: NodeSettings, pressure: Pressure, previousConditions: any[] | undefined, now: string): any {
  const { capacity, allocatable } = resources(s);
  return {
    capacity,
    allocatable,
    conditions: conditions(conditionSpecs(pressure, true), previousConditions, now),
    addresses: [
      { type: 'InternalIP', address: s.nodeIP },
      { type: 'Hostname', address: s.hostname },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: s.port } },
    nodeInfo: nodeInfo(s),
  };
}

/**
 * Whether two statuses differ in more than heartbeat times (kubelet's nodeStatusHasChanged):
 * conditions by type, status, reason and message; quantities by value (the server may
 * write them in another form); the rest as JSON with sorted keys.
 */
export function sameNodeStatus(a: any, b: any): boolean {
  const conds = (s: any) =>
    JSON.stringify(
      (s?.conditions ?? [])
        .map((c: any) => [c.type, c.status, c.reason, c.message])
        .sort((x: string[], y: string[]) => (x[0] < y[0] ? -1 : 1)),
    );
  const qty = (m: Record<string, string> | undefined) =>
    JSON.stringify(
      Object.entries(m ?? {})
        .map(([k, v]) => [k, parseQuantity(v)])
        .sort(),
    );
  const sorted = (v: any): any => (Array.isArray(v) ? v.map(sorted) : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])])) : v);
  const rest = (s: any) => JSON.stringify(sorted({ addresses: s?.addresses, daemonEndpoints: s?.daemonEndpoints, nodeInfo: s?.nodeInfo }));
  return conds(a) === conds(b) && qty(a?.capacity) === qty(b?.capacity) && qty(a?.allocatable) === qty(b?.allocatable) && rest(a) === rest(b);
}
