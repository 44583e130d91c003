// Table printers of the autoscaling, quota, storage-attachment, API-priority-and-fairness,
// admission-policy, aggregation and IP-allocation kinds, with the columns kube-apiserver
// 1.33 gives them (pkg/printers/internalversion). Column sets, order, cell types and cell
// values follow kube; the descriptions are our own.
import { col, nameCol, ageCol, type KindPrinter } from './types.js';
import { age, formatLabelSelector, int, len, str } from './format.js';
import { name } from './workload.js';

const obj = (v: unknown): any => (v && typeof v === 'object' ? v : undefined);
const arr = (v: unknown): any[] => (Array.isArray(v) ? v : []);
/** A Quantity as Go's String() prints it: its canonical text, "0" when unset. */
const quantity = (v: unknown): string => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : '0');

// ---- HorizontalPodAutoscaler --------------------------------------------------------------

/** The metrics of an HPA in autoscaling/v2 form; a v1 object's CPU target becomes one Resource metric. */
function hpaMetrics(o: any): { specs: any[]; statuses: any[] } {
  if (Array.isArray(o?.spec?.metrics) || Array.isArray(o?.status?.currentMetrics)) return { specs: arr(o?.spec?.metrics), statuses: arr(o?.status?.currentMetrics) };
  const target = o?.spec?.targetCPUUtilizationPercentage;
  if (typeof target !== 'number') return { specs: [], statuses: [] };
  const current = o?.status?.currentCPUUtilizationPercentage;
  return {
    specs: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: target } } }],
    statuses: typeof current === 'number' ? [{ type: 'Resource', resource: { name: 'cpu', current: { averageUtilization: current } } }] : [],
  };
}

/** kube's formatHPAMetrics: "current/target" per metric, at most two, then "+ N more...". */
export function formatHPAMetrics(specs: any[], statuses: any[]): string {
  if (specs.length === 0) return '<none>';
  const list: string[] = [];
  specs.forEach((spec, i) => {
    const st = statuses.length > i ? statuses[i] : undefined;
    const avgOrValue = (s: any, cur: any) => {
      if (s?.target?.averageValue !== undefined && s?.target?.averageValue !== null) {
        const current = cur && cur.current?.averageValue !== undefined ? quantity(cur.current.averageValue) : '<unknown>';
        return `${current}/${quantity(s.target.averageValue)} (avg)`;
      }
      const current = cur ? quantity(cur.current?.value) : '<unknown>';
      return `${current}/${quantity(s?.target?.value)}`;
    };
    const resource = (s: any, cur: any) => {
      if (s?.target?.averageValue !== undefined && s?.target?.averageValue !== null) {
        const current = cur ? quantity(cur.current?.averageValue) : '<unknown>';
        return `${str(s?.name)}: ${current}/${quantity(s.target.averageValue)}`;
      }
      const current = cur && typeof cur.current?.averageUtilization === 'number' ? `${cur.current.averageUtilization}%` : '<unknown>';
      const target = typeof s?.target?.averageUtilization === 'number' ? `${s.target.averageUtilization}%` : '<auto>';
      return `${str(s?.name)}: ${current}/${target}`;
    };
    switch (spec?.type) {
      case 'External':
        list.push(avgOrValue(spec.external, obj(st?.external)));
        break;
      case 'Pods': {
        const current = obj(st?.pods) ? quantity(st.pods.current?.averageValue) : '<unknown>';
        list.push(`${current}/${quantity(spec.pods?.target?.averageValue)}`);
        break;
      }
      case 'Object':
        list.push(avgOrValue(spec.object, obj(st?.object)));
        break;
      case 'Resource':
        list.push(resource(spec.resource, obj(st?.resource)));
        break;
      case 'ContainerResource':
        list.push(resource(spec.containerResource, obj(st?.containerResource)));
        break;
      default:
        list.push('<unknown type>');
    }
  });
  const max = 2;
  if (list.length > max) return `${list.slice(0, max).join(', ')} + ${list.length - max} more...`;
  return list.join(', ');
}

export const horizontalPodAutoscalerPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the autoscaler.'),
    col('Reference', 'string', 'The scaled resource, as Kind/name.'),
    col('Targets', 'string', 'Current and target value of each metric.'),
    col('MinPods', 'string', 'Lower bound of the replica count.'),
    col('MaxPods', 'string', 'Upper bound of the replica count.'),
    col('Replicas', 'string', 'Replicas the scaled resource has now.'),
    ageCol(),
  ],
  row(o, now) {
    const ref = o?.spec?.scaleTargetRef;
    const { specs, statuses } = hpaMetrics(o);
    const min = typeof o?.spec?.minReplicas === 'number' ? String(o.spec.minReplicas) : '<unset>';
    return { cells: [name(o), `${str(ref?.kind)}/${str(ref?.name)}`, formatHPAMetrics(specs, statuses), min, int(o?.spec?.maxReplicas), int(o?.status?.currentReplicas), age(o, now)] };
  },
};

// ---- ResourceQuota, LimitRange ----------------------------------------------------------

export const resourceQuotaPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the quota.'),
    ageCol(),
    col('Request', 'string', 'Used and hard amounts of the request (and count) resources.'),
    col('Limit', 'string', 'Used and hard amounts of the limits.* resources.'),
  ],
  row(o, now) {
    const hard = obj(o?.spec?.hard) ?? {};
    const used = obj(o?.status?.used) ?? {};
    const request: string[] = [];
    const limit: string[] = [];
    for (const r of Object.keys(hard).sort()) {
      const parts = r.split('.');
      (parts.length > 1 && parts[0] === 'limits' ? limit : request).push(`${r}: ${quantity(used[r])}/${quantity(hard[r])}`);
    }
    return { cells: [name(o), age(o, now), request.join(', '), limit.join(', ')] };
  },
};

/** RFC 3339 in UTC with whole seconds, Go's zero time for a missing timestamp. */
function createdAt(ts: unknown): string {
  const t = typeof ts === 'string' ? Date.parse(ts) : NaN;
  return Number.isNaN(t) ? '0001-01-01T00:00:00Z' : new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export const limitRangePrinter: KindPrinter = {
  columns: [nameCol('Name of the limit range.'), col('Created At', 'date', 'When the object was created (UTC).')],
  row: (o) => ({ cells: [name(o), createdAt(o?.metadata?.creationTimestamp)] }),
};

// ---- aggregation, component status ------------------------------------------------------

export const apiServicePrinter: KindPrinter = {
  columns: [
    nameCol('Name of the API service: version.group.'),
    col('Service', 'string', 'The service that serves the group version, or Local.'),
    col('Available', 'string', 'The Available condition, with its reason when not True.'),
    ageCol(),
  ],
  row(o, now) {
    const svc = obj(o?.spec?.service);
    const service = svc ? `${str(svc.namespace)}/${str(svc.name)}` : 'Local';
    const c = arr(o?.status?.conditions).find((x) => x?.type === 'Available');
    let available = 'Unknown';
    if (c) available = c.status === 'True' ? 'True' : `${str(c.status)} (${str(c.reason)})`;
    return { cells: [name(o), service, available, age(o, now)] };
  },
};

export const componentStatusPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the component.'),
    col('Status', 'string', 'Healthy or Unhealthy, from the Healthy condition.'),
    col('Message', 'string', 'Message of the Healthy condition.'),
    col('Error', 'string', 'Error of the Healthy condition.'),
  ],
  row(o) {
    const c = arr(o?.conditions).find((x) => x?.type === 'Healthy');
    const status = c ? (c.status === 'True' ? 'Healthy' : 'Unhealthy') : 'Unknown';
    return { cells: [name(o), status, str(c?.message), str(c?.error)] };
  },
};

// ---- storage ------------------------------------------------------------------------------

export const csiDriverPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the CSI driver.'),
    col('AttachRequired', 'boolean', 'Whether volumes need an attach operation.'),
    col('PodInfoOnMount', 'boolean', 'Whether pod information is passed on mount.'),
    col('StorageCapacity', 'boolean', 'Whether the scheduler considers storage capacity.'),
    col('TokenRequests', 'string', 'Audiences of the service account tokens passed on mount.'),
    col('RequiresRepublish', 'boolean', 'Whether NodePublishVolume is called periodically.'),
    col('Modes', 'string', 'Volume lifecycle modes the driver supports.'),
    ageCol(),
  ],
  row(o, now) {
    const s = o?.spec ?? {};
    const audiences = arr(s.tokenRequests).map((t) => str(t?.audience));
    const modes = arr(s.volumeLifecycleModes).map(String);
    return {
      cells: [
        name(o),
        s.attachRequired !== false,
        s.podInfoOnMount === true,
        s.storageCapacity === true,
        audiences.length ? audiences.join(',') : '<unset>',
        s.requiresRepublish === true,
        modes.length ? modes.join(',') : '<none>',
        age(o, now),
      ],
    };
  },
};

export const csiNodePrinter: KindPrinter = {
  columns: [nameCol('Name of the CSI node (the node name).'), col('Drivers', 'integer', 'Number of CSI drivers on the node.'), ageCol()],
  row: (o, now) => ({ cells: [name(o), len(o?.spec?.drivers), age(o, now)] }),
};

export const volumeAttachmentPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the volume attachment.'),
    col('Attacher', 'string', 'The CSI driver that attaches the volume.'),
    col('PV', 'string', 'The persistent volume attached.'),
    col('Node', 'string', 'The node the volume is attached to.'),
    col('Attached', 'boolean', 'Whether the attach operation succeeded.'),
    ageCol(),
  ],
  row: (o, now) => ({ cells: [name(o), str(o?.spec?.attacher), str(o?.spec?.source?.persistentVolumeName), str(o?.spec?.nodeName), o?.status?.attached === true, age(o, now)] }),
};

export const csiStorageCapacityPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the capacity object.'),
    col('StorageClassName', 'string', 'The storage class the capacity is for.'),
    col('Capacity', 'string', 'Capacity available in the topology segment.'),
    ageCol(),
  ],
  row: (o, now) => ({ cells: [name(o), str(o?.storageClassName), o?.capacity === undefined || o?.capacity === null ? '<unset>' : quantity(o.capacity), age(o, now)] }),
};

// ---- API priority and fairness -------------------------------------------------------------

export const flowSchemaPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the flow schema.'),
    col('PriorityLevel', 'string', 'The priority level matching requests go to.'),
    col('MatchingPrecedence', 'string', 'Order among flow schemas: lower matches first.'),
    col('DistinguisherMethod', 'string', 'How requests are split into flows.'),
    ageCol(),
    col('MissingPL', 'string', 'Whether the priority level is missing (the Dangling condition).'),
  ],
  row(o, now) {
    const dm = obj(o?.spec?.distinguisherMethod);
    const dangling = arr(o?.status?.conditions).find((c) => c?.type === 'Dangling');
    return { cells: [name(o), str(o?.spec?.priorityLevelConfiguration?.name), int(o?.spec?.matchingPrecedence), dm ? str(dm.type) : '<none>', age(o, now), dangling ? str(dangling.status) : 'Unknown'] };
  },
};

export const priorityLevelConfigurationPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the priority level.'),
    col('Type', 'string', 'Exempt or Limited.'),
    col('NominalConcurrencyShares', 'string', 'Share of the server concurrency of a Limited level.'),
    col('Queues', 'string', 'Queues of a queuing level.'),
    col('HandSize', 'string', 'Queues a flow is shuffle-sharded to.'),
    col('QueueLengthLimit', 'string', 'Requests a queue may hold.'),
    ageCol(),
  ],
  row(o, now) {
    const lim = obj(o?.spec?.limited);
    const q = obj(lim?.limitResponse?.queuing);
    const none = '<none>';
    return {
      cells: [
        name(o),
        str(o?.spec?.type),
        lim ? int(lim.nominalConcurrencyShares) : none,
        q ? int(q.queues) : none,
        q ? int(q.handSize) : none,
        q ? int(q.queueLengthLimit) : none,
        age(o, now),
      ],
    };
  },
};

// ---- admission policies ---------------------------------------------------------------------

export const validatingAdmissionPolicyPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the policy.'),
    col('Validations', 'integer', 'Number of validation expressions.'),
    col('ParamKind', 'string', 'Kind of the parameter resource, as apiVersion/kind.'),
    ageCol(),
  ],
  row(o, now) {
    const pk = obj(o?.spec?.paramKind);
    return { cells: [name(o), len(o?.spec?.validations), pk ? `${str(pk.apiVersion)}/${str(pk.kind)}` : '<unset>', age(o, now)] };
  },
};

/** kube's printMutatingAdmissionPolicy: the mutations counted instead of the validations. */
export const mutatingAdmissionPolicyPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the policy.'),
    col('Mutations', 'integer', 'Number of mutations.'),
    col('ParamKind', 'string', 'Kind of the parameter resource, as apiVersion/kind.'),
    ageCol(),
  ],
  row(o, now) {
    const pk = obj(o?.spec?.paramKind);
    return { cells: [name(o), len(o?.spec?.mutations), pk ? `${str(pk.apiVersion)}/${str(pk.kind)}` : '<unset>', age(o, now)] };
  },
};

export const validatingAdmissionPolicyBindingPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the binding.'),
    col('PolicyName', 'string', 'The policy it binds.'),
    col('ParamRef', 'string', 'The parameter resource: namespace/name, or a selector.'),
    ageCol(),
  ],
  row(o, now) {
    const pr = obj(o?.spec?.paramRef);
    let param = '<unset>';
    if (pr && str(pr.name)) param = str(pr.namespace) ? `${pr.namespace}/${pr.name}` : `*/${pr.name}`;
    else if (pr && obj(pr.selector)) param = formatLabelSelector(pr.selector);
    return { cells: [name(o), str(o?.spec?.policyName), param, age(o, now)] };
  },
};

// ---- IP allocation ----------------------------------------------------------------------------

export const ipAddressPrinter: KindPrinter = {
  columns: [nameCol('Name of the IP address (the address itself).'), col('ParentRef', 'string', 'The object the address is allocated to.'), ageCol()],
  row(o, now) {
    const p = obj(o?.spec?.parentRef);
    let ref = '<none>';
    if (p) {
      // schema.GroupResource's String(), lower-cased: resource.group, or resource alone.
      ref = (str(p.group) ? `${str(p.resource)}.${p.group}` : str(p.resource)).toLowerCase();
      if (str(p.namespace)) ref += `/${p.namespace}`;
      ref += `/${str(p.name)}`;
    }
    return { cells: [name(o), ref, age(o, now)] };
  },
};

export const serviceCIDRPrinter: KindPrinter = {
  columns: [nameCol('Name of the service CIDR.'), col('CIDRs', 'string', 'The ranges service IPs are allocated from.'), ageCol()],
  row: (o, now) => ({ cells: [name(o), arr(o?.spec?.cidrs).map(String).join(','), age(o, now)] }),
};
