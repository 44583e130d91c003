// networking.k8s.io IPAddress and ServiceCIDR (kube's pkg/registry/networking/ipaddress and
// servicecidr strategies, with pkg/apis/networking/validation's rules and wording).
//
// An IPAddress a user creates takes its address from the Service allocator (kube's allocator
// counts every IPAddress as taken); one the allocator manages is put back when a user deletes
// it while its Service still holds the address (kube's repair loop).
import { errors, GoValue } from '../errors.js';
import { Strategy, type FieldError, type StrategyContext } from './strategy.js';
import type { ServiceAllocator } from './allocators/service-allocator.js';

const IP_EXAMPLE = 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)';

function v4(name: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(name);
  if (!m) return null;
  const parts = m.slice(1).map(Number);
  return parts.some((p) => p > 255) ? null : parts;
}

/** The canonical text of an IPv6 address (RFC 5952, as Go's netip prints it), or null. */
function canonicalV6(name: string): string | null {
  if (!name.includes(':') || !/^[0-9a-fA-F:.]+$/.test(name)) return null;
  const halves = name.split('::');
  if (halves.length > 2) return null;
  const groups = (h: string): number[] | null => {
    if (h === '') return [];
    const out: number[] = [];
    const parts = h.split(':');
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (i === parts.length - 1 && p.includes('.')) {
        const q = v4(p);
        if (!q) return null;
        out.push((q[0] << 8) | q[1], (q[2] << 8) | q[3]);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(p)) out.push(parseInt(p, 16));
      else return null;
    }
    return out;
  };
  const a = groups(halves[0]);
  const b = halves.length === 2 ? groups(halves[1]) : [];
  if (!a || !b) return null;
  let all: number[];
  if (halves.length === 2) {
    if (a.length + b.length > 7) return null;
    all = [...a, ...new Array(8 - a.length - b.length).fill(0), ...b];
  } else {
    if (a.length !== 8) return null;
    all = a;
  }
  // The longest run (of two or more) of zero groups becomes '::'.
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (all[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && all[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = all.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** kube's ValidateIPAddressName: a valid IP, in its canonical form. */
export function ipAddressNameErrors(name: string): string[] {
  const q = v4(name);
  if (q) {
    const canon = q.join('.');
    return canon === name ? [] : [`must be in canonical form ("${canon}")`];
  }
  const c6 = canonicalV6(name);
  if (c6 === null) return [IP_EXAMPLE];
  return c6 === name ? [] : [`must be in canonical form ("${c6}")`];
}

const PATH_SEGMENT_BAD = (s: string): string[] => {
  if (s === '.' || s === '..') return [`may not be '${s}'`];
  const out: string[] = [];
  for (const c of ['/', '%']) if (s.includes(c)) out.push(`may not contain '${c}'`);
  return out;
};

export class IpAddressStrategy extends Strategy {
  constructor(readonly allocator: ServiceAllocator) {
    super();
  }

  override validate(obj: any): FieldError[] {
    const errs: FieldError[] = [];
    const name = obj.metadata?.name ?? '';
    if (name) for (const d of ipAddressNameErrors(name)) errs.push({ field: 'metadata.name', type: 'FieldValueInvalid', value: name, detail: d });
    const ref = obj.spec?.parentRef;
    if (ref === undefined || ref === null) {
      errs.push({ field: 'spec.parentRef', type: 'FieldValueRequired', detail: '' });
      return errs;
    }
    if (ref.group) {
      if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(ref.group) || ref.group.length > 253) {
        errs.push({
          field: 'spec.parentRef.group',
          type: 'FieldValueInvalid',
          value: ref.group,
          detail: "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        });
      }
    }
    for (const k of ['resource', 'name'] as const) {
      if (!ref[k]) errs.push({ field: `spec.parentRef.${k}`, type: 'FieldValueRequired', detail: '' });
      else for (const d of PATH_SEGMENT_BAD(ref[k])) errs.push({ field: `spec.parentRef.${k}`, type: 'FieldValueInvalid', value: ref[k], detail: d });
    }
    if (ref.namespace) for (const d of PATH_SEGMENT_BAD(ref.namespace)) errs.push({ field: 'spec.parentRef.namespace', type: 'FieldValueInvalid', value: ref.namespace, detail: d });
    return errs;
  }

  override validateUpdate(obj: any, old: any): FieldError[] {
    if (JSON.stringify(obj.spec?.parentRef ?? null) !== JSON.stringify(old.spec?.parentRef ?? null)) {
      return [{ field: 'spec.parentRef', type: 'FieldValueInvalid', value: obj.spec?.parentRef ?? null, detail: 'field is immutable' }];
    }
    return [];
  }

  /** A user's IPAddress in the Service range takes the address (the allocator's own are reserved already). */
  override beginCreate(obj: any, ctx: StrategyContext): ((committed: boolean) => void) | void {
    if (this.allocator.objects.internal.has(obj) || ctx.dryRun) return;
    const ip: string = obj.metadata.name;
    if (!this.allocator.ips.contains(ip)) return;
    const r = this.allocator.ips.allocate(ip);
    if (r === 'taken') throw errors.alreadyExists({ group: 'networking.k8s.io', resource: 'ipaddresses' }, ip);
    return (committed) => {
      if (!committed) this.allocator.ips.release(ip);
    };
  }

  override afterDelete(obj: any): void {
    const ip: string = obj.metadata?.name ?? '';
    if (this.allocator.objects.deleting.has(ip)) return; // the allocator's own release
    const owner = this.allocator.owners.get(ip);
    if (owner) {
      // Still held by its Service: put back, as kube's repair loop does on the delete event.
      setImmediate(() => void this.allocator.objects.create(ip, owner));
      return;
    }
    if (this.allocator.ips.contains(ip)) this.allocator.ips.release(ip);
  }
}

function validCidr(s: unknown): string[] {
  if (typeof s !== 'string') return ['must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)'];
  const m = /^(.+)\/(\d{1,3})$/.exec(s);
  if (!m) return ['must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)'];
  const bits = Number(m[2]);
  const q = v4(m[1]);
  if (q) {
    if (bits > 32) return ['must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)'];
    const n = ((q[0] << 24) | (q[1] << 16) | (q[2] << 8) | q[3]) >>> 0;
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    const base = (n & mask) >>> 0;
    if (base !== n || q.join('.') !== m[1]) {
      const canon = `${[base >>> 24, (base >>> 16) & 255, (base >>> 8) & 255, base & 255].join('.')}/${bits}`;
      return [`must be in canonical form ("${canon}")`];
    }
    return [];
  }
  const c6 = canonicalV6(m[1]);
  if (c6 === null || bits > 128) return ['must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)'];
  return [];
}

function isV6Cidr(s: string): boolean {
  return s.includes(':');
}

export class ServiceCidrStrategy extends Strategy {
  /** Called when the default ServiceCIDR is gone: kube's default ServiceCIDR controller recreates it. */
  constructor(readonly onDefaultDeleted: () => void = () => {}) {
    super();
  }

  override afterDelete(obj: any): void {
    if (obj.metadata?.name === 'kubernetes') setImmediate(this.onDefaultDeleted);
  }

  override validate(obj: any): FieldError[] {
    const cidrs = obj.spec?.cidrs;
    if (!Array.isArray(cidrs) || cidrs.length === 0) return [{ field: 'spec.cidrs', type: 'FieldValueRequired', detail: 'at least one CIDR required' }];
    const spec = new GoValue(`{[${cidrs.join(' ')}]}`);
    if (cidrs.length > 2) return [{ field: 'spec.cidrs', type: 'FieldValueInvalid', value: spec, detail: 'may only hold up to 2 values' }];
    if (cidrs.length === 2 && (validCidr(cidrs[0]).length > 0 || validCidr(cidrs[1]).length > 0 || isV6Cidr(cidrs[0]) === isV6Cidr(cidrs[1]))) {
      return [{ field: 'spec.cidrs', type: 'FieldValueInvalid', value: spec, detail: 'may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64' }];
    }
    const errs: FieldError[] = [];
    cidrs.forEach((c: unknown, i: number) => {
      for (const d of validCidr(c)) errs.push({ field: `spec.cidrs[${i}]`, type: 'FieldValueInvalid', value: c, detail: d });
    });
    return errs;
  }

  override validateUpdate(obj: any, old: any): FieldError[] {
    if (JSON.stringify(obj.spec?.cidrs ?? null) !== JSON.stringify(old.spec?.cidrs ?? null)) {
      return [{ field: 'spec.cidrs', type: 'FieldValueInvalid', value: new GoValue(`[]string{${(obj.spec?.cidrs ?? []).map((c: string) => JSON.stringify(c)).join(', ')}}`), detail: 'field is immutable' }];
    }
    return [];
  }
}
