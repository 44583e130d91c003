// Table printers of core/v1 kinds other than Pod, and of coordination.k8s.io Leases.
// Column sets, order, priorities and cell values follow kube-apiserver 1.33; the
// descriptions are our own.
import { col, nameCol, ageCol, type KindPrinter } from './types.js';
import { age, formatLabels, int, joinHostPort, len, listWithMore, since, str, timeOf } from './format.js';
import { name } from './workload.js';

export const nodePrinter: KindPrinter = {
  columns: [
    nameCol('Name of the node.'),
    col('Status', 'string', 'Readiness of the node, and whether scheduling on it is disabled.'),
    col('Roles', 'string', 'Roles taken from the node-role labels.'),
    ageCol(),
    col('Version', 'string', 'Version of the kubelet.'),
    col('Internal-IP', 'string', 'First internal address of the node.', 1),
    col('External-IP', 'string', 'First external address of the node.', 1),
    col('OS-Image', 'string', 'Operating system image reported by the node.', 1),
    col('Kernel-Version', 'string', 'Kernel version reported by the node.', 1),
    col('Container-Runtime', 'string', 'Container runtime and its version.', 1),
  ],
  row(o, now) {
    const conds: any[] = Array.isArray(o?.status?.conditions) ? o.status.conditions : [];
    let ready: any;
    for (const c of conds) if (c?.type === 'Ready') ready = c; // the last one wins, as in a map
    const status: string[] = [ready ? (ready.status === 'True' ? 'Ready' : 'NotReady') : 'Unknown'];
    if (o?.spec?.unschedulable === true) status.push('SchedulingDisabled');
    const roles = new Set<string>();
    for (const [k, v] of Object.entries((o?.metadata?.labels ?? {}) as Record<string, string>)) {
      if (k.startsWith('node-role.kubernetes.io/')) {
        const r = k.slice('node-role.kubernetes.io/'.length);
        if (r) roles.add(r);
      } else if (k === 'kubernetes.io/role' && v) roles.add(v);
    }
    const addrs: any[] = Array.isArray(o?.status?.addresses) ? o.status.addresses : [];
    const addr = (t: string): string => str(addrs.find((a) => a?.type === t)?.address) || '<none>';
    const info = o?.status?.nodeInfo ?? {};
    return {
      cells: [
        name(o),
        status.join(','),
        [...roles].sort().join(',') || '<none>',
        age(o, now),
        str(info.kubeletVersion),
        addr('InternalIP'),
        addr('ExternalIP'),
        str(info.osImage) || '<unknown>',
        str(info.kernelVersion) || '<unknown>',
        str(info.containerRuntimeVersion) || '<unknown>',
      ],
    };
  },
};

export const namespacePrinter: KindPrinter = {
  columns: [nameCol('Name of the namespace.'), col('Status', 'string', 'Phase of the namespace: Active or Terminating.'), ageCol()],
  row: (o, now) => ({ cells: [name(o), str(o?.status?.phase), age(o, now)] }),
};

function serviceExternalIP(spec: any, status: any): string {
  const external: string[] = Array.isArray(spec.externalIPs) ? spec.externalIPs.map(String) : [];
  switch (spec.type ?? 'ClusterIP') {
    case 'ClusterIP':
    case 'NodePort':
      return external.length ? external.join(',') : '<none>';
    case 'LoadBalancer': {
      const ingress: any[] = Array.isArray(status?.loadBalancer?.ingress) ? status.loadBalancer.ingress : [];
      const set = new Set<string>();
      for (const i of ingress) {
        if (str(i?.ip)) set.add(i.ip);
        else if (str(i?.hostname)) set.add(i.hostname);
      }
      const lb = [...set].sort();
      // The server prints tables as for -o wide, so the list is never clipped.
      if (external.length) return [...lb, ...external].join(',');
      return lb.length ? lb.join(',') : '<pending>';
    }
    case 'ExternalName':
      return str(spec.externalName);
  }
  return '<unknown>';
}

export function servicePorts(ports: unknown): string {
  const list: any[] = Array.isArray(ports) ? ports : [];
  const s = list
    .map((p) => {
      const proto = str(p?.protocol) || 'TCP';
      return int(p?.nodePort) > 0 ? `${int(p?.port)}:${int(p.nodePort)}/${proto}` : `${int(p?.port)}/${proto}`;
    })
    .join(',');
  return s || '<none>';
}

export const servicePrinter: KindPrinter = {
  columns: [
    nameCol('Name of the service.'),
    col('Type', 'string', 'How the service is exposed: ClusterIP, NodePort, LoadBalancer or ExternalName.'),
    col('Cluster-IP', 'string', 'The virtual IP of the service inside the cluster.'),
    col('External-IP', 'string', 'Addresses the service is reachable at from outside the cluster.'),
    col('Port(s)', 'string', 'Ports the service exposes, with node ports and protocols.'),
    ageCol(),
    col('Selector', 'string', 'Labels of the pods the service routes to.', 1),
  ],
  row(o, now) {
    const spec = o?.spec ?? {};
    const clusterIP = str(spec.clusterIPs?.[0]) || str(spec.clusterIP) || '<none>';
    return {
      cells: [name(o), str(spec.type) || 'ClusterIP', clusterIP, serviceExternalIP(spec, o?.status), servicePorts(spec.ports), age(o, now), formatLabels(spec.selector)],
    };
  },
};

export function formatEndpoints(subsets: unknown): string {
  const list: any[] = Array.isArray(subsets) ? subsets : [];
  if (list.length === 0) return '<none>';
  const out: string[] = [];
  const max = 3;
  let count = 0;
  for (const ss of list) {
    const addrs: any[] = Array.isArray(ss?.addresses) ? ss.addresses : [];
    const ports: any[] = Array.isArray(ss?.ports) ? ss.ports : [];
    if (ports.length === 0) {
      // Headless services may have no ports.
      count += addrs.length;
      for (const a of addrs) if (out.length < max) out.push(str(a?.ip));
      continue;
    }
    for (const p of ports) {
      count += addrs.length;
      for (const a of addrs) if (out.length < max) out.push(joinHostPort(str(a?.ip), int(p?.port)));
    }
  }
  return listWithMore(out, count, max);
}

export const endpointsPrinter: KindPrinter = {
  columns: [nameCol('Name of the endpoints, the same as its service.'), col('Endpoints', 'string', 'Ready addresses with their ports (the first three).'), ageCol()],
  row: (o, now) => ({ cells: [name(o), formatEndpoints(o?.subsets), age(o, now)] }),
};

export const configMapPrinter: KindPrinter = {
  columns: [nameCol('Name of the config map.'), col('Data', 'string', 'Number of keys in data and binaryData.'), ageCol()],
  row: (o, now) => ({ cells: [name(o), len(o?.data) + len(o?.binaryData), age(o, now)] }),
};

export const secretPrinter: KindPrinter = {
  columns: [nameCol('Name of the secret.'), col('Type', 'string', 'Type of the secret, which fixes the keys it must hold.'), col('Data', 'string', 'Number of keys in data.'), ageCol()],
  row: (o, now) => ({ cells: [name(o), str(o?.type) || 'Opaque', len(o?.data), age(o, now)] }),
};

export const serviceAccountPrinter: KindPrinter = {
  columns: [nameCol('Name of the service account.'), col('Secrets', 'string', 'Number of secrets listed for the account.'), ageCol()],
  row: (o, now) => ({ cells: [name(o), len(o?.secrets), age(o, now)] }),
};

export const leasePrinter: KindPrinter = {
  columns: [nameCol('Name of the lease.'), col('Holder', 'string', 'Identity of the current holder of the lease.'), ageCol()],
  row: (o, now) => ({ cells: [name(o), str(o?.spec?.holderIdentity), age(o, now)] }),
};

// Events: core/v1 and events.k8s.io/v1 are one kind stored twice over; the printer reads
// either form (events.k8s.io names regarding/note/deprecated* what core calls
// involvedObject/message/...).
function eventView(o: any): any {
  if (o?.apiVersion === 'events.k8s.io/v1' || o?.regarding !== undefined || o?.note !== undefined) {
    return {
      ...o,
      involvedObject: o.regarding ?? {},
      message: o.note,
      firstTimestamp: o.deprecatedFirstTimestamp,
      lastTimestamp: o.deprecatedLastTimestamp,
      count: o.deprecatedCount,
      source: o.deprecatedSource,
    };
  }
  return o;
}

function eventSource(e: any): string {
  const component = str(e.source?.component) || str(e.reportingController ?? e.reportingComponent);
  const host = str(e.source?.host) || str(e.reportingInstance);
  return host ? `${component}, ${host}` : component;
}

export const eventPrinter: KindPrinter = {
  columns: [
    col('Last Seen', 'string', 'Time since the event was last observed.'),
    col('Type', 'string', 'Normal or Warning.'),
    col('Reason', 'string', 'Short machine-readable reason for the event.'),
    col('Object', 'string', 'The object the event is about, as kind/name.'),
    col('Subobject', 'string', 'Path of the part of the object the event is about.', 1),
    col('Source', 'string', 'Component (and host) that reported the event.', 1),
    col('Message', 'string', 'Human-readable description of the event.'),
    col('First Seen', 'string', 'Time since the event was first observed.', 1),
    col('Count', 'string', 'How many times the event occurred.', 1),
    nameCol(undefined, 1),
  ],
  row(raw, now) {
    const e = eventView(raw);
    let first = since(e.firstTimestamp, now);
    if (timeOf(e.firstTimestamp) === 0) first = since(e.eventTime, now);
    let last = since(e.lastTimestamp, now);
    if (timeOf(e.lastTimestamp) === 0) last = first;
    let count = int(e.count);
    if (e.series && typeof e.series === 'object') {
      last = since(e.series.lastObservedTime, now);
      count = int(e.series.count);
    } else if (count === 0) {
      count = 1; // singleton events of the new API carry no count
    }
    const kind = str(e.involvedObject?.kind).toLowerCase();
    const target = str(e.involvedObject?.name) ? `${kind}/${e.involvedObject.name}` : kind;
    return {
      cells: [last, str(e.type), str(e.reason), target, str(e.involvedObject?.fieldPath), eventSource(e), str(e.message).trim(), first, count, name(raw)],
    };
  },
};
