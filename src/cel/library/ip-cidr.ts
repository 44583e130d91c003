// kube's IP and CIDR libraries (apiserver/pkg/cel/library/ip.go, cidr.go): ip(), isIP(),
// ip.isCanonical(), family, isUnspecified, isLoopback, isLinkLocalMulticast,
// isLinkLocalUnicast, isGlobalUnicast, string(); cidr(), isCIDR(), containsIP, containsCIDR,
// ip(), masked(), prefixLength(), string(). As kube: IPv4-mapped IPv6 addresses and zones are refused.
import type { Environment } from '@marcbachmann/cel-js';
import { isIPv4, isIPv6 } from 'node:net';
import { def, fail, namespace } from './def.js';

export class IP {
  static celTypeName = 'net.IP';
  constructor(
    readonly family: 4 | 6,
    readonly value: bigint,
  ) {}
  get bits(): number {
    return this.family === 4 ? 32 : 128;
  }
  equals(o: unknown): boolean {
    return o instanceof IP && o.family === this.family && o.value === this.value;
  }
  toString(): string {
    if (this.family === 4) return [24n, 16n, 8n, 0n].map((s) => String((this.value >> s) & 255n)).join('.');
    const groups = Array.from({ length: 8 }, (_, i) => Number((this.value >> BigInt(112 - 16 * i)) & 0xffffn));
    // the longest run of zero groups (two or more) becomes "::" (RFC 5952)
    let best = -1;
    let bestLen = 1;
    for (let i = 0; i < 8; ) {
      let j = i;
      while (j < 8 && groups[j] === 0) j++;
      if (j - i > bestLen) {
        best = i;
        bestLen = j - i;
      }
      i = j === i ? i + 1 : j;
    }
    const hex = groups.map((g) => g.toString(16));
    if (best < 0) return hex.join(':');
    return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
  }
}

export class CIDR {
  static celTypeName = 'net.IPPrefix';
  constructor(
    readonly ip: IP,
    readonly prefix: number,
  ) {}
  equals(o: unknown): boolean {
    return o instanceof CIDR && o.ip.equals(this.ip) && o.prefix === this.prefix;
  }
  mask(): bigint {
    const host = BigInt(this.ip.bits - this.prefix);
    return ((1n << BigInt(this.ip.bits)) - 1n) ^ ((1n << host) - 1n);
  }
  masked(): CIDR {
    return new CIDR(new IP(this.ip.family, this.ip.value & this.mask()), this.prefix);
  }
  containsIP(ip: IP): boolean {
    return ip.family === this.ip.family && (ip.value & this.mask()) === (this.ip.value & this.mask());
  }
  toString(): string {
    return `${this.ip}/${this.prefix}`;
  }
}

export function parseIP(s: string): IP | null {
  if (isIPv4(s)) {
    const parts = s.split('.');
    if (parts.some((p) => p.length > 1 && p.startsWith('0'))) return null; // Go's netip refuses leading zeros
    return new IP(4, parts.reduce((acc, p) => (acc << 8n) | BigInt(p), 0n));
  }
  if (!isIPv6(s) || s.includes('%')) return null;
  let text = s;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  let tail: bigint[] = [];
  if (v4) {
    const ip4 = parseIP(v4[1]);
    if (!ip4) return null;
    tail = [ip4.value >> 16n, ip4.value & 0xffffn];
    text = text.slice(0, -v4[1].length) + (text.endsWith(':' + v4[1]) ? '' : '');
    if (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1);
  }
  const [head, rest] = text.includes('::') ? text.split('::') : [text, null];
  const h = head ? head.split(':').map((x) => BigInt('0x' + x)) : [];
  const r = rest !== null && rest !== '' ? rest.split(':').map((x) => BigInt('0x' + x)) : [];
  const fill = 8 - h.length - r.length - tail.length;
  const groups = [...h, ...Array(rest !== null ? fill : 0).fill(0n), ...r, ...tail];
  if (groups.length !== 8) return null;
  const value = groups.reduce((acc, g) => (acc << 16n) | g, 0n);
  if (value >> 32n === 0xffffn) return null; // IPv4-mapped IPv6 is refused by kube
  return new IP(6, value);
}

export function parseCIDR(s: string): CIDR | null {
  const slash = s.indexOf('/');
  if (slash < 0) return null;
  const ip = parseIP(s.slice(0, slash));
  const p = s.slice(slash + 1);
  if (!ip || !/^(0|[1-9]\d*)$/.test(p) || Number(p) > ip.bits) return null;
  return new CIDR(ip, Number(p));
}

function inPrefix(ip: IP, cidr: string): boolean {
  return parseCIDR(cidr)!.containsIP(ip);
}

export function registerIpCidr(env: Environment): void {
  env.registerType('IP', IP as any);
  env.registerType('CIDR', CIDR as any);
  const ip = (s: string) => parseIP(s) ?? fail(`IP Address '${s}' parse error during conversion from string: ParseAddr("${s}"): unable to parse IP`);
  const cidr = (s: string) => parseCIDR(s) ?? fail(`network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix("${s}"): bad prefix`);
  def(env, 'ip(string): IP', ip);
  def(env, 'isIP(string): bool', (s: string) => parseIP(s) !== null);
  namespace(env, 'ip', 'IPNamespace');
  def(env, 'IPNamespace.isCanonical(string): bool', (_n: unknown, s: string) => isCanonicalIP(s));
  def(env, 'string(IP): string', (a: IP) => a.toString());
  def(env, 'IP.family(): int', (a: IP) => BigInt(a.family));
  def(env, 'IP.isUnspecified(): bool', (a: IP) => a.value === 0n);
  def(env, 'IP.isLoopback(): bool', (a: IP) => (a.family === 4 ? inPrefix(a, '127.0.0.0/8') : a.value === 1n));
  def(env, 'IP.isLinkLocalMulticast(): bool', (a: IP) => (a.family === 4 ? inPrefix(a, '224.0.0.0/24') : inPrefix(a, 'ff02::/16')));
  def(env, 'IP.isLinkLocalUnicast(): bool', (a: IP) => (a.family === 4 ? inPrefix(a, '169.254.0.0/16') : inPrefix(a, 'fe80::/10')));
  def(env, 'IP.isGlobalUnicast(): bool', (a: IP) => {
    if (a.value === 0n) return false;
    if (a.family === 4) {
      return !(inPrefix(a, '127.0.0.0/8') || inPrefix(a, '224.0.0.0/4') || inPrefix(a, '169.254.0.0/16') || a.value === 0xffffffffn);
    }
    return !(a.value === 1n || inPrefix(a, 'ff00::/8') || inPrefix(a, 'fe80::/10'));
  });
  def(env, 'cidr(string): CIDR', cidr);
  def(env, 'isCIDR(string): bool', (s: string) => parseCIDR(s) !== null);
  def(env, 'string(CIDR): string', (c: CIDR) => c.toString());
  def(env, 'CIDR.containsIP(IP): bool', (c: CIDR, a: IP) => c.containsIP(a));
  def(env, 'CIDR.containsIP(string): bool', (c: CIDR, s: string) => c.containsIP(ip(s)));
  def(env, 'CIDR.containsCIDR(CIDR): bool', (c: CIDR, o: CIDR) => o.prefix >= c.prefix && c.containsIP(o.ip));
  def(env, 'CIDR.containsCIDR(string): bool', (c: CIDR, s: string) => {
    const o = cidr(s);
    return o.prefix >= c.prefix && c.containsIP(o.ip);
  });
  def(env, 'CIDR.ip(): IP', (c: CIDR) => c.ip);
  def(env, 'CIDR.masked(): CIDR', (c: CIDR) => c.masked());
  def(env, 'CIDR.prefixLength(): int', (c: CIDR) => BigInt(c.prefix));
}

/** ip.isCanonical(string): whether the text is the address's canonical form. */
export function isCanonicalIP(s: string): boolean {
  const a = parseIP(s) ?? fail(`IP Address '${s}' parse error during conversion from string: ParseAddr("${s}"): unable to parse IP`);
  return a.toString() === s;
}
