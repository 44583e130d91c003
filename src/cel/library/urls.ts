// kube's URL library (apiserver/pkg/cel/library/urls.go): url(), isURL(), and the URL's
// getScheme, getHost, getHostname, getPort, getEscapedPath, getQuery. Parsing follows Go's
// url.ParseRequestURI: an absolute URL or an absolute path.
import type { Environment } from '@marcbachmann/cel-js';
import { def, fail } from './def.js';

export class KubeURL {
  static celTypeName = 'kubernetes.URL';
  constructor(
    readonly raw: string,
    readonly scheme: string,
    readonly host: string,
    readonly path: string,
    readonly query: string,
  ) {}
  equals(o: unknown): boolean {
    return o instanceof KubeURL && o.raw === this.raw;
  }
}

function parse(s: string): KubeURL | null {
  if (!s || /[\s\x00-\x1f]/.test(s)) return null;
  if (s.startsWith('/')) {
    const q = s.indexOf('?');
    return new KubeURL(s, '', '', q < 0 ? s : s.slice(0, q), q < 0 ? '' : s.slice(q + 1));
  }
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):(.*)$/.exec(s);
  if (!m) return null;
  const rest = m[2];
  if (!rest.startsWith('/')) return null; // ParseRequestURI refuses opaque URLs
  let host = '';
  let pathAndQuery = rest;
  if (rest.startsWith('//')) {
    const end = rest.slice(2).search(/[/?#]/);
    host = end < 0 ? rest.slice(2) : rest.slice(2, 2 + end);
    pathAndQuery = end < 0 ? '' : rest.slice(2 + end);
    const at = host.lastIndexOf('@');
    if (at >= 0) host = host.slice(at + 1);
    if (/[^a-zA-Z0-9.\-_~:[\]%!$&'()*+,;=]/.test(host)) return null;
    if (host.includes(':') && !host.startsWith('[')) {
      const port = host.slice(host.lastIndexOf(':') + 1);
      if (!/^\d*$/.test(port) || host.indexOf(':') !== host.lastIndexOf(':')) return null;
    }
  }
  const hash = pathAndQuery.indexOf('#');
  if (hash >= 0) pathAndQuery = pathAndQuery.slice(0, hash);
  const q = pathAndQuery.indexOf('?');
  return new KubeURL(s, m[1].toLowerCase(), host, q < 0 ? pathAndQuery : pathAndQuery.slice(0, q), q < 0 ? '' : pathAndQuery.slice(q + 1));
}

export function registerUrls(env: Environment): void {
  env.registerType('URL', KubeURL as any);
  def(env, 'url(string): URL', (s: string) => parse(s) ?? fail(`URL parse error during conversion from string: parse "${s}": invalid URI for request`));
  def(env, 'isURL(string): bool', (s: string) => parse(s) !== null);
  def(env, 'URL.getScheme(): string', (u: KubeURL) => u.scheme);
  def(env, 'URL.getHost(): string', (u: KubeURL) => u.host);
  def(env, 'URL.getHostname(): string', (u: KubeURL) => {
    if (u.host.startsWith('[')) return u.host.slice(1, u.host.indexOf(']'));
    const c = u.host.lastIndexOf(':');
    return c < 0 ? u.host : u.host.slice(0, c);
  });
  def(env, 'URL.getPort(): string', (u: KubeURL) => {
    const h = u.host.startsWith('[') ? u.host.slice(u.host.indexOf(']') + 1) : u.host;
    const c = h.lastIndexOf(':');
    return c < 0 ? '' : h.slice(c + 1);
  });
  def(env, 'URL.getEscapedPath(): string', (u: KubeURL) => u.path);
  def(env, 'URL.getQuery(): map<string, list<string>>', (u: KubeURL) => {
    const out: Record<string, string[]> = {};
    if (!u.query) return out;
    for (const [k, v] of new URLSearchParams(u.query)) (out[k] ??= []).push(v);
    return out;
  });
}
