// Table printers of further built-in kinds that kube-apiserver 1.33 gives their own
// columns (beyond the ones kubectl users look at most). Column sets, order, priorities and
// cell values follow kube; the descriptions are our own.
import { col, nameCol, ageCol, type KindPrinter } from './types.js';
import { age, formatLabelSelector, formatLabels, int, len, listWithMore, str } from './format.js';
import { humanDuration } from './duration.js';

import { name, replicaCountPrinter, templateCells } from './workload.js';

export const replicationControllerPrinter: KindPrinter = replicaCountPrinter('replication controller', col('Selector', 'string', 'Labels of the pods it manages.', 1), formatLabels);

export const podTemplatePrinter: KindPrinter = {
  columns: [
    nameCol('Name of the pod template.'),
    col('Containers', 'string', 'Names of the containers of the template.'),
    col('Images', 'string', 'Images of the containers of the template.'),
    col('Pod Labels', 'string', 'Labels the template gives its pods.'),
  ],
  row(o) {
    const [names, images] = templateCells(o?.template);
    return { cells: [name(o), names, images, formatLabels(o?.template?.metadata?.labels)] };
  },
};

const intOrString = (v: unknown): string => (v === undefined || v === null ? 'N/A' : String(v));

export const podDisruptionBudgetPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the disruption budget.'),
    col('Min Available', 'string', 'Pods that must stay available.'),
    col('Max Unavailable', 'string', 'Pods that may be unavailable.'),
    col('Allowed Disruptions', 'integer', 'Pod disruptions allowed right now.'),
    ageCol(),
  ],
  row: (o, now) => ({ cells: [name(o), intOrString(o?.spec?.minAvailable), intOrString(o?.spec?.maxUnavailable), int(o?.status?.disruptionsAllowed), age(o, now)] }),
};

function loadBalancerAddresses(ingress: unknown): string {
  const set = new Set<string>();
  for (const i of Array.isArray(ingress) ? ingress : []) {
    if (str(i?.ip)) set.add(i.ip);
    else if (str(i?.hostname)) set.add(i.hostname);
  }
  return [...set].sort().join(',');
}

function ingressHosts(rules: unknown): string {
  const list: any[] = Array.isArray(rules) ? rules : [];
  const hosts: string[] = [];
  let more = false;
  for (const r of list) {
    if (hosts.length === 3) more = true;
    if (!more && str(r?.host)) hosts.push(r.host);
  }
  if (hosts.length === 0) return '*';
  return more ? `${hosts.join(',')} + ${list.length - 3} more...` : hosts.join(',');
}

export const ingressPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the ingress.'),
    col('Class', 'string', 'The IngressClass that handles it.'),
    col('Hosts', 'string', 'Hosts the rules match.'),
    col('Address', 'string', 'Addresses of the load balancer in front of it.'),
    col('Ports', 'string', 'Ports it serves: 80, and 443 with TLS.'),
    ageCol(),
  ],
  row: (o, now) => ({
    cells: [
      name(o),
      typeof o?.spec?.ingressClassName === 'string' ? o.spec.ingressClassName : '<none>',
      ingressHosts(o?.spec?.rules),
      loadBalancerAddresses(o?.status?.loadBalancer?.ingress),
      len(o?.spec?.tls) > 0 ? '80, 443' : '80',
      age(o, now),
    ],
  }),
};

export const ingressClassPrinter: KindPrinter = {
  columns: [nameCol('Name of the ingress class.'), col('Controller', 'string', 'Controller that implements the class.'), col('Parameters', 'string', 'Resource holding further configuration.'), ageCol()],
  row(o, now) {
    const p = o?.spec?.parameters;
    let params = '<none>';
    if (p && typeof p === 'object') params = `${str(p.kind)}${typeof p.apiGroup === 'string' ? '.' + p.apiGroup : ''}/${str(p.name)}`;
    return { cells: [name(o), str(o?.spec?.controller), params, age(o, now)] };
  },
};

const ACCESS_MODES: Array<[string, string]> = [
  ['ReadWriteOnce', 'RWO'],
  ['ReadOnlyMany', 'ROX'],
  ['ReadWriteMany', 'RWX'],
  ['ReadWriteOncePod', 'RWOP'],
];
function accessModes(modes: unknown): string {
  const set = new Set(Array.isArray(modes) ? modes : []);
  return ACCESS_MODES.filter(([m]) => set.has(m)).map(([, s]) => s).join(',');
}

function storageClassOf(o: any): string {
  const beta = o?.metadata?.annotations?.['volume.beta.kubernetes.io/storage-class'];
  if (typeof beta === 'string') return beta;
  return str(o?.spec?.storageClassName);
}

export const persistentVolumePrinter: KindPrinter = {
  columns: [
    nameCol('Name of the volume.'),
    col('Capacity', 'string', 'Storage capacity of the volume.'),
    col('Access Modes', 'string', 'How the volume may be mounted.'),
    col('Reclaim Policy', 'string', 'What happens to the volume when its claim is released.'),
    col('Status', 'string', 'Phase of the volume.'),
    col('Claim', 'string', 'The claim bound to the volume, as namespace/name.'),
    col('StorageClass', 'string', 'Storage class of the volume.'),
    col('VolumeAttributesClass', 'string', 'Volume attributes class of the volume.'),
    col('Reason', 'string', 'Why the volume is in its phase.'),
    ageCol(),
    col('VolumeMode', 'string', 'Filesystem or Block.', 1),
  ],
  row(o, now) {
    const spec = o?.spec ?? {};
    const claim = spec.claimRef ? `${str(spec.claimRef.namespace)}/${str(spec.claimRef.name)}` : '';
    const phase = o?.metadata?.deletionTimestamp ? 'Terminating' : str(o?.status?.phase);
    return {
      cells: [
        name(o),
        str(spec.capacity?.storage) || '0',
        accessModes(spec.accessModes),
        str(spec.persistentVolumeReclaimPolicy),
        phase,
        claim,
        storageClassOf(o),
        typeof spec.volumeAttributesClassName === 'string' ? spec.volumeAttributesClassName : '<unset>',
        str(o?.status?.reason),
        age(o, now),
        typeof spec.volumeMode === 'string' ? spec.volumeMode : '<unset>',
      ],
    };
  },
};

export const persistentVolumeClaimPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the claim.'),
    col('Status', 'string', 'Phase of the claim.'),
    col('Volume', 'string', 'The volume bound to the claim.'),
    col('Capacity', 'string', 'Capacity of the bound volume.'),
    col('Access Modes', 'string', 'How the bound volume may be mounted.'),
    col('StorageClass', 'string', 'Storage class of the claim.'),
    col('VolumeAttributesClass', 'string', 'Volume attributes class of the claim.'),
    ageCol(),
    col('VolumeMode', 'string', 'Filesystem or Block.', 1),
  ],
  row(o, now) {
    const spec = o?.spec ?? {};
    const phase = o?.metadata?.deletionTimestamp ? 'Terminating' : str(o?.status?.phase);
    const bound = str(spec.volumeName) !== '';
    return {
      cells: [
        name(o),
        phase,
        str(spec.volumeName),
        bound ? str(o?.status?.capacity?.storage) || '0' : '',
        bound ? accessModes(o?.status?.accessModes) : '',
        storageClassOf(o),
        typeof spec.volumeAttributesClassName === 'string' ? spec.volumeAttributesClassName : '<unset>',
        age(o, now),
        typeof spec.volumeMode === 'string' ? spec.volumeMode : '<unset>',
      ],
    };
  },
};

export const storageClassPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the storage class; "(default)" marks the default class.'),
    col('Provisioner', 'string', 'The volume plugin that provisions volumes of the class.'),
    col('ReclaimPolicy', 'string', 'Reclaim policy of the volumes it provisions.'),
    col('VolumeBindingMode', 'string', 'When volumes are bound and provisioned.'),
    col('AllowVolumeExpansion', 'string', 'Whether volumes of the class may grow.'),
    ageCol(),
  ],
  row(o, now) {
    const ann = o?.metadata?.annotations ?? {};
    const isDefault = ann['storageclass.kubernetes.io/is-default-class'] === 'true' || ann['storageclass.beta.kubernetes.io/is-default-class'] === 'true';
    return {
      cells: [
        name(o) + (isDefault ? ' (default)' : ''),
        str(o?.provisioner),
        str(o?.reclaimPolicy) || 'Delete',
        str(o?.volumeBindingMode) || 'Immediate',
        o?.allowVolumeExpansion === true,
        age(o, now),
      ],
    };
  },
};

function subjects(list: unknown): [string, string, string] {
  const users: string[] = [];
  const groups: string[] = [];
  const sas: string[] = [];
  for (const s of Array.isArray(list) ? list : []) {
    if (s?.kind === 'User') users.push(str(s.name));
    else if (s?.kind === 'Group') groups.push(str(s.name));
    else if (s?.kind === 'ServiceAccount') sas.push(`${str(s.namespace)}:${str(s.name)}`);
  }
  return [users.join(', '), groups.join(', '), sas.join(', ')];
}

function bindingPrinter(what: string): KindPrinter {
  return {
    columns: [
      nameCol(`Name of the ${what}.`),
      col('Role', 'string', 'The role granted, as Kind/name.'),
      ageCol(),
      col('Users', 'string', 'Users the role is granted to.', 1),
      col('Groups', 'string', 'Groups the role is granted to.', 1),
      col('ServiceAccounts', 'string', 'Service accounts the role is granted to, as namespace:name.', 1),
    ],
    row: (o, now) => ({ cells: [name(o), `${str(o?.roleRef?.kind)}/${str(o?.roleRef?.name)}`, age(o, now), ...subjects(o?.subjects)] }),
  };
}
export const roleBindingPrinter = bindingPrinter('role binding');
export const clusterRoleBindingPrinter = bindingPrinter('cluster role binding');

export const networkPolicyPrinter: KindPrinter = {
  columns: [nameCol('Name of the network policy.'), col('Pod-Selector', 'string', 'Pods the policy applies to.'), ageCol()],
  row: (o, now) => ({ cells: [name(o), formatLabelSelector(o?.spec?.podSelector ?? {}), age(o, now)] }),
};

export const controllerRevisionPrinter: KindPrinter = {
  columns: [nameCol('Name of the revision.'), col('Controller', 'string', 'The controller owning the revision, as kind.group/name.'), col('Revision', 'string', 'Revision number.'), ageCol()],
  row(o, now) {
    const owners: any[] = Array.isArray(o?.metadata?.ownerReferences) ? o.metadata.ownerReferences : [];
    const ref = owners.find((r) => r?.controller === true);
    let controller = '<none>';
    if (ref) {
      const apiVersion = str(ref.apiVersion);
      const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : '';
      const kind = str(ref.kind);
      controller = kind || group ? `${(group ? `${kind}.${group}` : kind).toLowerCase()}/${str(ref.name)}` : str(ref.name);
    }
    return { cells: [name(o), controller, int(o?.revision), age(o, now)] };
  },
};

export const priorityClassPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the priority class.'),
    col('Value', 'integer', 'Priority of pods of the class.'),
    col('Global-Default', 'boolean', 'Whether pods without a class get this one.'),
    ageCol(),
    col('PreemptionPolicy', 'string', 'Whether pods of the class may preempt others.'),
  ],
  row: (o, now) => ({ cells: [name(o), int(o?.value), o?.globalDefault === true, age(o, now), str(o?.preemptionPolicy)] }),
};

export const runtimeClassPrinter: KindPrinter = {
  columns: [nameCol('Name of the runtime class.'), col('Handler', 'string', 'The container runtime configuration it selects.'), ageCol()],
  row: (o, now) => ({ cells: [name(o), str(o?.handler), age(o, now)] }),
};

function sliceList(values: string[], count: number): string {
  const s = listWithMore(values, count, 3);
  return s === '' ? '<unset>' : s;
}

export const endpointSlicePrinter: KindPrinter = {
  columns: [
    nameCol('Name of the endpoint slice.'),
    col('AddressType', 'string', 'IPv4, IPv6 or FQDN.'),
    col('Ports', 'string', 'Ports of the endpoints (the first three).'),
    col('Endpoints', 'string', 'Addresses of the endpoints (the first three).'),
    ageCol(),
  ],
  row(o, now) {
    const ports: any[] = Array.isArray(o?.ports) ? o.ports : [];
    const portList = ports.slice(0, 3).map((p) => (typeof p?.port === 'number' ? String(p.port) : typeof p?.name === 'string' ? p.name : '*'));
    const addrs: string[] = [];
    let count = 0;
    for (const e of Array.isArray(o?.endpoints) ? o.endpoints : []) {
      for (const a of Array.isArray(e?.addresses) ? e.addresses : []) {
        if (addrs.length < 3) addrs.push(String(a));
        count++;
      }
    }
    return { cells: [name(o), str(o?.addressType), sliceList(portList, ports.length), sliceList(addrs, count), age(o, now)] };
  },
};

function webhookPrinter(what: string): KindPrinter {
  return {
    columns: [nameCol(`Name of the ${what}.`), col('Webhooks', 'integer', 'Number of webhooks it configures.'), ageCol()],
    row: (o, now) => ({ cells: [name(o), len(o?.webhooks), age(o, now)] }),
  };
}
export const mutatingWebhookPrinter = webhookPrinter('mutating webhook configuration');
export const validatingWebhookPrinter = webhookPrinter('validating webhook configuration');

export const certificateSigningRequestPrinter: KindPrinter = {
  columns: [
    nameCol('Name of the request.'),
    ageCol(),
    col('SignerName', 'string', 'The signer asked to sign the certificate.'),
    col('Requestor', 'string', 'The user who made the request.'),
    col('RequestedDuration', 'string', 'Validity asked for the certificate.'),
    col('Condition', 'string', 'Approved, Denied or Pending, then Failed and Issued.'),
  ],
  row(o, now) {
    const conds: any[] = Array.isArray(o?.status?.conditions) ? o.status.conditions : [];
    const has = (t: string) => conds.some((c) => c?.type === t);
    let status = has('Denied') ? 'Denied' : has('Approved') ? 'Approved' : 'Pending';
    if (has('Failed')) status += ',Failed';
    if (str(o?.status?.certificate)) status += ',Issued';
    const seconds = o?.spec?.expirationSeconds;
    const duration = typeof seconds === 'number' ? humanDuration(seconds * 1000) : '<none>';
    return { cells: [name(o), age(o, now), str(o?.spec?.signerName) || '<none>', str(o?.spec?.username), duration, status] };
  },
};
