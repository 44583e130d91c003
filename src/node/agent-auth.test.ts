// kubelet's request attributes (pkg/kubelet/server/auth.go GetRequestAttributes) and the
// agent's import boundary (it reaches the server only as a client).
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { requestAttributes } from './agent-auth.js';

const subs = (method: string, path: string, fine = true) => requestAttributes(method, path, fine).map((a) => `${a.verb}:${a.subresource}`);

describe('kubelet request attributes', () => {
  it('verb from the method; subresource by path, fine-grained ones tried before proxy', () => {
    expect(subs('GET', '/pods')).toEqual(['get:pods', 'get:proxy']);
    expect(subs('GET', '/pods/')).toEqual(['get:pods', 'get:proxy']);
    expect(subs('GET', '/runningpods/')).toEqual(['get:pods', 'get:proxy']);
    expect(subs('GET', '/healthz')).toEqual(['get:healthz', 'get:proxy']);
    expect(subs('GET', '/healthz/ping')).toEqual(['get:healthz', 'get:proxy']);
    expect(subs('GET', '/configz')).toEqual(['get:configz', 'get:proxy']);
    expect(subs('GET', '/stats/summary')).toEqual(['get:stats']);
    expect(subs('GET', '/metrics/cadvisor')).toEqual(['get:metrics']);
    expect(subs('GET', '/logs/syslog')).toEqual(['get:log']);
    expect(subs('POST', '/checkpoint/ns/p/c')).toEqual(['create:checkpoint']);
    expect(subs('POST', '/exec/ns/p/c')).toEqual(['create:proxy']);
    expect(subs('GET', '/containerLogs/ns/p/c')).toEqual(['get:proxy']);
    expect(subs('PUT', '/x')).toEqual(['update:proxy']);
    expect(subs('PATCH', '/x')).toEqual(['patch:proxy']);
    expect(subs('DELETE', '/x')).toEqual(['delete:proxy']);
    // a path that only starts like one is not below it
    expect(subs('GET', '/podsx')).toEqual(['get:proxy']);
    expect(subs('GET', '/statsfoo')).toEqual(['get:proxy']);
  });

  it('without KubeletFineGrainedAuthz, /pods and /healthz are proxy only', () => {
    expect(subs('GET', '/pods', false)).toEqual(['get:proxy']);
    expect(subs('GET', '/healthz', false)).toEqual(['get:proxy']);
  });
});

describe('import boundary', () => {
  it('src/node imports nothing from the rest of src/ but leaf modules (the agent is a separate program)', () => {
    const here = dirname(fileURLToPath(import.meta.url));
    const offenders: string[] = [];
    // a leaf module (node built-ins and packages only, such as the WebSocket handshake and the
    // kubeconfig reader) may be shared: it brings none of the server with it
    const leaf = (file: string) => !/from\s+'\./.test(readFileSync(file.replace(/\.js$/, '.ts'), 'utf8'));
    const visit = (d: string) => {
      for (const n of readdirSync(d)) {
        const p = join(d, n);
        if (statSync(p).isDirectory()) visit(p);
        else if (n.endsWith('.ts')) {
          for (const m of readFileSync(p, 'utf8').matchAll(/from\s+'(\.[^']+)'/g)) {
            const target = resolve(dirname(p), m[1]);
            if (!target.startsWith(here + '/') && !leaf(target)) offenders.push(`${p}: ${m[1]}`);
          }
        }
      }
    };
    visit(here);
    expect(offenders).toEqual([]);
  });
});
