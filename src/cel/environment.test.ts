import { describe, it, expect } from 'vitest';
import { compile, evalBudgeted } from './environment.js';
import { toCel, celView } from './values.js';
import { Authorizer } from './library/authz.js';
import { ACTUAL_COST_LIMIT_EXCEEDED } from './cost.js';

const VARS = { object: 'dyn', params: 'dyn', authorizer: 'Authorizer' };

function run(expr: string, object: unknown = {}, extra: Record<string, unknown> = {}): any {
  const r = compile(expr, VARS);
  if (r.error) throw new Error(r.error);
  return r.program!.eval({ object: toCel(object), params: null, authorizer: new Authorizer(undefined, undefined), ...extra }).value;
}

describe('CEL environment', () => {
  it('reads JSON objects as kube does: whole numbers are ints, optionals, macros', () => {
    const obj = { spec: { replicas: 3, ratio: 0.5, items: [{ name: 'a1' }, { name: 'a2' }] }, metadata: { labels: { app: 'web' } } };
    expect(run('object.spec.replicas + 1 == 4', obj)).toBe(true);
    expect(run('object.spec.ratio < 1.0', obj)).toBe(true);
    expect(run('object.spec.items.all(x, x.name.startsWith("a"))', obj)).toBe(true);
    expect(run('object.spec.items.exists_one(x, x.name == "a2")', obj)).toBe(true);
    expect(run('object.spec.items.map(x, x.name).filter(n, n != "a1")', obj)).toEqual(['a2']);
    expect(run('object.metadata.?labels.app.orValue("none")', obj)).toBe('web');
    expect(run('object.metadata.?annotations.x.orValue("none")', obj)).toBe('none');
    expect(run('has(object.spec.replicas) && !has(object.spec.paused)', obj)).toBe(true);
    expect(run('cel.bind(r, object.spec.replicas, r * r)', obj)).toBe(9n);
  });

  it('reads a view of an object as it reads a copy (ints, nested maps and lists; an undefined value is absent)', () => {
    const obj = { spec: { replicas: 3, gone: undefined, items: [{ n: 1 }, { n: 2 }] } };
    for (const e of ['object.spec.replicas == 3', '!has(object.spec.gone)', 'object.spec.items.map(x, x.n).sum() == 3', 'size(object.spec) == 2', 'object.spec.items[1].n == 2']) {
      const p = compile(e, VARS).program!;
      expect(p.eval({ object: celView(obj), params: null, authorizer: null }).value).toBe(true);
      expect(p.eval({ object: toCel(obj), params: null, authorizer: null }).value).toBe(true);
    }
  });

  it('compiles once per expression and environment', () => {
    const a = compile('object.x == 1', VARS);
    expect(compile('object.x == 1', VARS)).toBe(a);
    expect(compile('object.x == 1', { object: 'dyn' })).not.toBe(a);
  });

  it('reports compile errors as cel-go does', () => {
    expect(compile('foo + 1', VARS).error).toBe("compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n | foo + 1\n | ^");
    expect(compile('object.a ==', VARS).error).toMatch(/^compilation failed: ERROR: <input>:1:12: Syntax error: /);
    expect(compile('1 + 1', VARS, ['bool']).error).toBe('must evaluate to bool but got int');
  });

  it('reports evaluation errors with cel-go wording', () => {
    expect(() => run('object.spec.x == 1', { spec: {} })).toThrow('no such key: x');
  });

  it('stops an expression over the per-call cost limit', () => {
    const list = Array.from({ length: 200 }, (_, i) => i);
    const r = compile('object.l.map(x, object.l.map(y, object.l.map(z, x + y + z))).size() > 0', VARS);
    expect(() => r.program!.eval({ object: toCel({ l: list }), params: null, authorizer: null })).toThrow(ACTUAL_COST_LIMIT_EXCEEDED);
  });

  it('charges a shared budget (kube: validation failed due to running out of cost budget)', () => {
    const r = compile('object.l.all(x, x >= 0)', VARS);
    const act = { object: toCel({ l: Array.from({ length: 50 }, (_, i) => i) }), params: null, authorizer: null };
    const first = evalBudgeted(r.program!, act, 1000);
    expect(first.value).toBe(true);
    expect(first.remaining).toBeLessThan(1000);
    expect(evalBudgeted(r.program!, act, 10).outOfBudget).toBe(true);
  });
});

describe('kube CEL libraries', () => {
  it('strings (ext.Strings v2)', () => {
    expect(run('"abc".charAt(1)')).toBe('b');
    expect(run('"a-b-c".replace("-", "_", 1)')).toBe('a_b-c');
    expect(run('"a,b".split(",")')).toEqual(['a', 'b']);
    expect(run('["x","y"].join("+")')).toBe('x+y');
    expect(run('"  x ".trim()')).toBe('x');
    expect(run('"AbC".lowerAscii()')).toBe('abc');
    expect(run('"%s has %d".format([dyn("a"), dyn(2)])')).toBe('a has 2');
    expect(run('strings.quote("a\\nb")')).toBe('"a\\nb"');
  });

  it('lists', () => {
    expect(run('[1, 2, 3].isSorted() && ![2, 1].isSorted()')).toBe(true);
    expect(run('[1, 2, 3].sum()')).toBe(6n);
    expect(run('[3, 1, 2].min()')).toBe(1n);
    expect(run('["a", "c", "b"].max()')).toBe('c');
    expect(run('[1, 2, 1].lastIndexOf(1)')).toBe(2n);
  });

  it('regex on RE2: matches, find, findAll, and linear time on a pattern that backtracks in JS', () => {
    expect(run('"abc".matches("^a.c$")')).toBe(true);
    expect(run('"abc123def456".find("[0-9]+")')).toBe('123');
    expect(run('"a1b2c3".findAll("[0-9]", 2)')).toEqual(['1', '2']);
    expect(run(`"${'a'.repeat(5000)}b".matches("^(a+)+$")`)).toBe(false);
    expect(() => run('"a".matches("(")')).toThrow(/given regex is invalid/);
  });

  it('url', () => {
    expect(run('url("https://user@example.com:8443/a/b?x=1&x=2").getHost()')).toBe('example.com:8443');
    expect(run('url("https://[::1]:80/").getHostname()')).toBe('::1');
    expect(run('url("https://example.com/p?x=1&x=2").getQuery()')).toEqual({ x: ['1', '2'] });
    expect(run('isURL("/just/a/path") && !isURL("relative/path")')).toBe(true);
  });

  it('quantity', () => {
    expect(run('quantity("1Gi").isGreaterThan(quantity("1G"))')).toBe(true);
    expect(run('quantity("500m").add(quantity("1.5")).asInteger()')).toBe(2n);
    expect(run('quantity("100Mi").compareTo(quantity("104857600"))')).toBe(0n);
    expect(run('quantity("1.5").isInteger()')).toBe(false);
    expect(run('isQuantity("1.2.3")')).toBe(false);
    expect(run('quantity("1k").sub(1).asApproximateFloat()')).toBe(999);
  });

  it('ip and cidr', () => {
    expect(run('ip("192.168.0.1").family()')).toBe(4n);
    expect(run('ip("::1").isLoopback() && ip("fe80::1").isLinkLocalUnicast()')).toBe(true);
    expect(run('ip.isCanonical("2001:db8::1") && !ip.isCanonical("2001:DB8::1")')).toBe(true);
    expect(run('isIP("::ffff:1.2.3.4")')).toBe(false); // kube refuses IPv4-mapped IPv6
    expect(run('cidr("10.0.0.0/8").containsIP("10.1.2.3") && !cidr("10.0.0.0/8").containsIP(ip("11.0.0.1"))')).toBe(true);
    expect(run('cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16")')).toBe(true);
    expect(run('string(cidr("10.1.2.3/16").masked())')).toBe('10.1.0.0/16');
  });

  it('format', () => {
    expect(run('format.dns1123Label().validate("ok-name").hasValue()')).toBe(false);
    expect(run('format.dns1123Label().validate("Not_OK").value().size() > 0')).toBe(true);
    expect(run('format.named("uuid").value().validate("1b4e28ba-2fa1-11d2-883f-0016d3cca427").hasValue()')).toBe(false);
    expect(run('format.named("nope").hasValue()')).toBe(false);
  });

  it('semver', () => {
    expect(run('semver("1.2.3").isLessThan(semver("1.10.0"))')).toBe(true);
    expect(run('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))')).toBe(true);
    expect(run('semver("v1.2", true).minor()')).toBe(2n);
    expect(run('isSemver("1.2") || isSemver("01.2.3")')).toBe(false);
  });

  it('two-variable comprehensions (ext.TwoVarComprehensions)', () => {
    const obj = { l: [1, 2, 3], m: { a: 1, b: 2 } };
    expect(run('object.l.all(i, v, v == i + 1)', obj)).toBe(true);
    expect(run('object.m.exists(k, v, k == "b" && v == 2)', obj)).toBe(true);
    expect(run('object.l.existsOne(i, v, v == 2)', obj)).toBe(true);
    expect(run('object.l.transformList(i, v, i > 0, v * 2)', obj)).toEqual([4n, 6n]);
    expect(run('object.m.transformMap(k, v, v + 1).b', obj)).toBe(3n);
  });

  it('sets', () => {
    expect(run('sets.contains([1, 2, 3], [3, 1])')).toBe(true);
    expect(run('sets.equivalent([1, 2], [2, 1, 1])')).toBe(true);
    expect(run('sets.intersects(["a"], ["b"])')).toBe(false);
  });

  it('authz: checks as the user through the given authorizer; none given denies', () => {
    const user = { name: 'alice', uid: '', groups: ['dev'] };
    const seen: any[] = [];
    const authz = new Authorizer(user, (a) => (seen.push(a), { allowed: a.resource === 'pods', reason: 'rbac says so' }));
    expect(run('authorizer.group("").resource("pods").namespace("ns").check("create").allowed()', {}, { authorizer: authz })).toBe(true);
    expect(seen[0]).toMatchObject({ user, verb: 'create', resource: 'pods', namespace: 'ns', resourceRequest: true });
    expect(run('authorizer.path("/metrics").check("get").reason()', {}, { authorizer: authz })).toBe('rbac says so');
    expect(run('authorizer.group("").resource("pods").check("get").allowed()')).toBe(false);
    const forRequest = new Authorizer(user, (a) => ({ allowed: a.resource === 'deployments' && a.subresource === 'scale', reason: '' }), {
      group: 'apps', resource: 'deployments', subresource: '', namespace: 'ns', name: 'd',
    });
    expect(run('authorizer.requestResource.subresource("scale").check("update").allowed()', {}, { authorizer: forRequest })).toBe(true);
  });
});
