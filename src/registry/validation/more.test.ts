// The small parsers and table rules behind the issue #4 validators of PVCs, Ingresses,
// NetworkPolicies, HPAs and tolerations, checked without a server.
import { describe, it, expect } from 'vitest';
import { parseIp, validateIngress, validateNetworkPolicy } from './network.js';
import { pathSegmentErrors, validateHpa } from './autoscaling.js';
import { validateTolerations } from './pod.js';
import { validatePvcUpdate } from './storage.js';

const fields = (errs: Array<{ field: string }>) => errs.map((e) => e.field);

describe('addresses as netutils parses them', () => {
  it('IPv4 with leading zeros, IPv6 with ::, an embedded IPv4 tail; not host names', () => {
    expect(parseIp('10.0.0.1')?.v6).toBe(false);
    expect(parseIp('010.000.000.001')?.bytes).toEqual([10, 0, 0, 1]);
    expect(parseIp('2001:db8::1')?.v6).toBe(true);
    expect(parseIp('::ffff:1.2.3.4')?.bytes.slice(12)).toEqual([1, 2, 3, 4]);
    for (const bad of ['256.0.0.1', 'example.com', '1:2:3', '1::2::3', '']) expect(parseIp(bad)).toBeUndefined();
  });

  it('except CIDRs must be strictly inside the block, of the same family', () => {
    const np = (cidr: string, except: string[]) => validateNetworkPolicy({ spec: { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr, except } }] }] } });
    expect(np('10.0.0.0/8', ['10.1.0.0/16', '10.255.255.255/32'])).toEqual([]);
    expect(fields(np('10.0.0.0/8', ['10.0.0.0/8', '11.0.0.0/16', '::/64']))).toEqual([
      'spec.ingress[0].from[0].ipBlock.except[0]',
      'spec.ingress[0].from[0].ipBlock.except[1]',
      'spec.ingress[0].from[0].ipBlock.except[2]',
    ]);
    expect(np('2001:db8::/32', ['2001:db8:1::/48'])).toEqual([]);
    // A block with host bits set is the network it names.
    expect(np('10.1.2.3/8', ['10.5.0.0/16'])).toEqual([]);
  });
});

describe('names and hosts', () => {
  it('IsValidPathSegmentName', () => {
    expect(pathSegmentErrors('web')).toEqual([]);
    expect(pathSegmentErrors('..')).toEqual(["may not be '..'"]);
    expect(pathSegmentErrors('a/b%c')).toEqual(["may not contain '/'", "may not contain '%'"]);
  });

  it('an Ingress host may be a wildcard only in its first label', () => {
    const host = (h: string) => validateIngress({ spec: { rules: [{ host: h }] } });
    expect(host('*.example.com')).toEqual([]);
    expect(host('example.com')).toEqual([]);
    expect(fields(host('*'))).toEqual(['spec.rules[0].host']);
    expect(fields(host('a.*.com'))).toEqual(['spec.rules[0].host']);
  });
});

describe('table rules', () => {
  it('tolerations: an empty operator is Equal; an empty effect matches all', () => {
    expect(validateTolerations([{ key: 'a', value: 'b' }, { key: 'a', operator: 'Exists' }, { operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 0 }], 't')).toEqual([]);
  });

  it('HPA: a stored minReplicas of 0 stays allowed on update', () => {
    const hpa = { spec: { minReplicas: 0, maxReplicas: 2, scaleTargetRef: { kind: 'Deployment', name: 'w' }, metrics: [{ type: 'External', external: { metric: { name: 'q' }, target: { type: 'Value', value: '5' } } }] } };
    expect(fields(validateHpa(hpa))).toEqual(['spec.minReplicas']);
    expect(validateHpa(hpa, hpa)).toEqual([]);
  });

  it('PVC: the volume name may be set once, then not changed', () => {
    const pvc = (volumeName?: string) => ({ spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...(volumeName ? { volumeName } : {}) } });
    expect(validatePvcUpdate(pvc('pv-1'), pvc())).toEqual([]);
    expect(fields(validatePvcUpdate(pvc('pv-2'), pvc('pv-1')))).toEqual(['spec']);
    // Quantities compare by value: 1024Mi is 1Gi.
    expect(validatePvcUpdate({ spec: { ...pvc().spec, resources: { requests: { storage: '1024Mi' } } } }, pvc())).toEqual([]);
  });
});
