// helm 4 (server-side apply by default) against a started server, with a chart made by
// `helm create`: install, upgrade with a changed value, rollback, uninstall, and
// install --dry-run=server (which must leave nothing behind).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { join } from 'node:path';
import { startServer, type TestServer } from './helpers/server.js';
import { helm, kubectl } from './helpers/kubectl.js';

let s: TestServer;
let chart: string;

beforeAll(async () => {
  s = await startServer();
  const r = await helm(s, ['create', 'demo']);
  if (r.code !== 0) throw new Error(`helm create failed: ${r.stderr}`);
  chart = join(s.dataDir, 'demo');
});
afterAll(async () => {
  await s?.stop();
  s?.cleanup();
});

async function h(args: string[]): Promise<string> {
  const r = await helm(s, args);
  if (r.code !== 0) throw new Error(`helm ${args.join(' ')} failed (${r.code}): ${r.stderr}\n${r.stdout}`);
  return r.stdout;
}

async function deploymentState(): Promise<{ replicas: number; image: string; managers: string[] }> {
  const r = await kubectl(s, ['get', 'deployment', 'rel-demo', '-n', 'default', '-o', 'json', '--show-managed-fields']);
  if (r.code !== 0) throw new Error(r.stderr);
  const d = JSON.parse(r.stdout);
  return { replicas: d.spec.replicas, image: d.spec.template.spec.containers[0].image, managers: d.metadata.managedFields.map((e: any) => `${e.manager}/${e.operation}`) };
}

describe('helm 4', () => {
  it('install, upgrade with a changed value, rollback, uninstall', async () => {
    expect(await h(['install', 'rel', chart, '-n', 'default'])).toContain('STATUS: deployed');
    const installed = await deploymentState();
    expect(installed.replicas).toBe(1);
    expect(installed.managers).toContain('helm/Apply');

    expect(await h(['upgrade', 'rel', chart, '-n', 'default', '--set', 'replicaCount=3', '--set', 'image.tag=1.27'])).toContain('REVISION: 2');
    const upgraded = await deploymentState();
    expect(upgraded).toMatchObject({ replicas: 3, image: 'nginx:1.27' });

    expect(await h(['rollback', 'rel', '1', '-n', 'default'])).toContain('Rollback was a success');
    const rolled = await deploymentState();
    expect(rolled.replicas).toBe(1);
    expect(rolled.image).not.toBe('nginx:1.27');
    const hist = await h(['history', 'rel', '-n', 'default']);
    expect(hist).toMatch(/3\s.*deployed.*Rollback to 1/);

    expect(await h(['uninstall', 'rel', '-n', 'default'])).toContain('uninstalled');
    const gone = await kubectl(s, ['get', 'deployment,service,serviceaccount', '-n', 'default', '-l', 'app.kubernetes.io/instance=rel', '-o', 'name']);
    expect(gone.stdout.trim()).toBe('');
    const releases = await kubectl(s, ['get', 'secrets', '-n', 'default', '-l', 'owner=helm', '-o', 'name']);
    expect(releases.stdout.trim()).toBe('');
  });

  it('install --dry-run=server renders against the server and stores nothing', async () => {
    const out = await h(['install', 'dry', chart, '-n', 'default', '--dry-run=server']);
    expect(out).toContain('Dry run complete');
    const objs = await kubectl(s, ['get', 'deployment,service,serviceaccount,secrets', '-n', 'default', '-l', 'app.kubernetes.io/instance=dry', '-o', 'name']);
    expect(objs.stdout.trim()).toBe('');
    const releases = await kubectl(s, ['get', 'secrets', '-n', 'default', '-l', 'owner=helm,name=dry', '-o', 'name']);
    expect(releases.stdout.trim()).toBe('');
  });
});
