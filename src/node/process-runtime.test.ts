// The process runtime on real processes: a short command runs to Completed with its log
// captured, restarts per restartPolicy keep the previous instance's log, exec beside the
// container, env expansion, readiness by probe, checkpoint archives, kill.
import { describe, expect, it, afterAll } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { extract } from 'tar-stream';
import { ORPHAN_MARKER, ProcessRuntime, containerCommand, expandVars } from './process-runtime.js';
import { RuntimeNotFoundError } from './runtime.js';
import { podStatus } from './pod-status.js';

const root = mkdtempSync(join(tmpdir(), 'ks-process-runtime-'));
const rt = new ProcessRuntime({ rootDir: root, nodeName: 'n1', nodeIP: '127.0.0.1', backoffInitialMs: 50, log: () => {} });
afterAll(() => rt.close());

let n = 0;
function pod(containers: any[], restartPolicy = 'Never'): any {
  n++;
  return { metadata: { name: `p${n}`, namespace: 'default', uid: `uid-${n}` }, spec: { nodeName: 'n1', restartPolicy, containers } };
}

async function until<T>(fn: () => T | undefined | false, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const text = async (r: NodeJS.ReadableStream) => {
  let s = '';
  for await (const c of r) s += c;
  return s;
};

describe('process runtime', () => {
  it('runs a short command to Completed and keeps its log', async () => {
    const p = pod([{ name: 'c', image: 'busybox', command: ['sh', '-c'], args: ['echo hello $(WHO); echo oops >&2'], env: [{ name: 'WHO', value: 'world' }] }]);
    await rt.syncPod(p);
    const st = await until(() => rt.podStatus(p.metadata.uid)?.find((c) => c.state === 'terminated'));
    expect(st).toMatchObject({ name: 'c', state: 'terminated', exitCode: 0, reason: 'Completed', restartCount: 0 });
    expect(st.containerID).toMatch(/^process:\/\/[0-9a-f]{64}$/);
    const logs = await text(await rt.logs({ namespace: 'default', pod: p.metadata.name, uid: '', container: 'c' }, {}, new AbortController().signal));
    expect(logs).toBe('hello world\noops\n');
    const ts = await text(await rt.logs({ namespace: 'default', pod: p.metadata.name, uid: p.metadata.uid, container: 'c' }, { timestamps: true, tailLines: 1 }, new AbortController().signal));
    expect(ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z oops\n$/);
    await expect(rt.logs({ namespace: 'default', pod: p.metadata.name, uid: '', container: 'c' }, { previous: true }, new AbortController().signal)).rejects.toThrow(/previous terminated container "c"/);
    await expect(rt.logs({ namespace: 'default', pod: 'nope', uid: '', container: 'c' }, {}, new AbortController().signal)).rejects.toBeInstanceOf(RuntimeNotFoundError);
  });

  it('follow streams new output until the container ends; limitBytes and sinceSeconds cut it', async () => {
    const p = pod([{ name: 'c', command: ['sh', '-c', 'echo one; sleep 1; echo two; sleep 1; echo three'] }]);
    await rt.syncPod(p);
    await until(() => rt.podStatus(p.metadata.uid)?.[0].state === 'running');
    const ref = { namespace: 'default', pod: p.metadata.name, uid: p.metadata.uid, container: 'c' };
    const followed = await text(await rt.logs(ref, { follow: true }, new AbortController().signal));
    expect(followed).toBe('one\ntwo\nthree\n');
    expect(await text(await rt.logs(ref, { limitBytes: 6 }, new AbortController().signal))).toBe('one\ntw');
    expect(await text(await rt.logs(ref, { sinceTime: new Date(Date.now() + 60_000) }, new AbortController().signal))).toBe('');
    // an aborted follow ends at once
    const p2 = pod([{ name: 'c', command: ['sh', '-c', 'echo a; exec sleep 100'] }]);
    await rt.syncPod(p2);
    await until(() => rt.podStatus(p2.metadata.uid)?.[0].state === 'running');
    const ac = new AbortController();
    const r = await rt.logs({ ...ref, pod: p2.metadata.name, uid: p2.metadata.uid }, { follow: true }, ac.signal);
    setTimeout(() => ac.abort(), 300);
    expect(await text(r)).toBe('a\n');
    await rt.killPod(p2.metadata.uid, 0);
  });

  it('init containers run one at a time, in order, before the containers; the pod status says so', async () => {
    const order = join(root, 'order');
    const p = pod(
      [{ name: 'main', command: ['sh', '-c', `echo main >> ${order}`] }],
      'Never',
    );
    p.spec.initContainers = [
      { name: 'init1', command: ['sh', '-c', `sleep 0.5; echo init1 >> ${order}`] },
      { name: 'init2', command: ['sh', '-c', `echo init2 >> ${order}`] },
    ];
    await rt.syncPod(p);
    await until(() => rt.podStatus(p.metadata.uid)?.find((c) => c.name === 'init1' && c.state === 'running'));
    const early = podStatus(p, rt.podStatus(p.metadata.uid), '127.0.0.1', undefined);
    expect(early.phase).toBe('Pending');
    expect(early.initContainerStatuses.map((c: any) => c.name)).toEqual(['init1', 'init2']);
    expect(early.containerStatuses[0].state).toEqual({ waiting: { reason: 'PodInitializing' } });
    expect(early.conditions.find((c: any) => c.type === 'Initialized')).toMatchObject({ status: 'False', reason: 'ContainersNotInitialized', message: 'containers with incomplete status: [init1 init2]' });
    await until(() => rt.podStatus(p.metadata.uid)?.find((c) => c.name === 'main' && c.state === 'terminated'));
    expect(readFileSync(order, 'utf8')).toBe('init1\ninit2\nmain\n');
    const done = podStatus(p, rt.podStatus(p.metadata.uid), '127.0.0.1', undefined);
    expect(done.phase).toBe('Succeeded');
    expect(done.conditions.find((c: any) => c.type === 'Initialized')).toMatchObject({ status: 'True' });

    // a failed init container of a Never pod: the pod fails, its containers never run
    const q = pod([{ name: 'main', command: ['true'] }], 'Never');
    q.spec.initContainers = [{ name: 'init', command: ['false'] }];
    await rt.syncPod(q);
    await until(() => rt.podStatus(q.metadata.uid)?.find((c) => c.name === 'init' && c.state === 'terminated'));
    const failed = podStatus(q, rt.podStatus(q.metadata.uid), '127.0.0.1', undefined);
    expect(failed.phase).toBe('Failed');
    expect(rt.podStatus(q.metadata.uid)?.map((c) => c.name)).toEqual(['init']);
  });

  it('a failing liveness probe kills the container, which restarts per the pod policy', async () => {
    const p = pod([{ name: 'c', command: ['sleep', '1000'], livenessProbe: { exec: { command: ['test', '-f', 'alive'] }, periodSeconds: 1, failureThreshold: 1 } }], 'Always');
    p.spec.terminationGracePeriodSeconds = 1;
    await rt.syncPod(p);
    const st = await until(() => rt.podStatus(p.metadata.uid)?.find((c) => c.restartCount >= 1 && c.state === 'running'), 15_000);
    expect(st.lastTerminated).toMatchObject({ exitCode: 143, reason: 'Error' });
    await rt.killPod(p.metadata.uid, 0);
  });

  it('attach joins the main process: stdin in (stdinOnce closes it), stdout and stderr out; portForward reaches 127.0.0.1', async () => {
    const p = pod([{ name: 'c', stdin: true, stdinOnce: true, command: ['sh', '-c', 'while read l; do echo "got $l"; echo "err $l" >&2; done; echo bye'] }]);
    await rt.syncPod(p);
    await until(() => rt.podStatus(p.metadata.uid)?.[0].state === 'running');
    const ref = { namespace: 'default', pod: p.metadata.name, uid: '', container: 'c' };
    const a = await rt.attach(ref, { stdin: true, stdout: true, stderr: true, tty: false });
    const out = text(a.stdout!);
    const err = text(a.stderr!);
    a.stdin!.write('one\n');
    a.stdin!.end('two\n');
    expect(await a.exit).toEqual({ code: 0 });
    expect(await out).toBe('got one\ngot two\nbye\n');
    expect(await err).toBe('err one\nerr two\n');

    const srv = createServer((c) => c.end('hello from the pod')).listen(0, '127.0.0.1');
    await new Promise((r) => srv.once('listening', r));
    const conn = await rt.portForward({ namespace: 'default', pod: p.metadata.name, uid: '' }, (srv.address() as any).port);
    expect(await text(conn)).toBe('hello from the pod');
    srv.close();
    await expect(rt.portForward({ namespace: 'default', pod: 'nope', uid: '' }, 1)).rejects.toBeInstanceOf(RuntimeNotFoundError);
  });

  it('cleanupOrphans kills what an earlier run left under <root-dir>/pods, by working directory', async () => {
    const root2 = mkdtempSync(join(tmpdir(), 'ks-orphans-'));
    const cdir = join(root2, 'pods', 'old-uid', 'containers', 'c');
    mkdirSync(cdir, { recursive: true });
    const orphan = spawn('sleep', ['1000'], { cwd: cdir, detached: true, stdio: 'ignore' });
    // one that ran in a workingDir elsewhere: known by the directory its environment names
    const elsewhere = spawn('sleep', ['1000'], { cwd: tmpdir(), env: { PATH: process.env.PATH, [ORPHAN_MARKER]: cdir }, detached: true, stdio: 'ignore' });
    const bystander = spawn('sleep', ['1000'], { cwd: root2, detached: true, stdio: 'ignore' });
    await Promise.all([orphan, elsewhere].map((c) => new Promise((r) => c.once('spawn', r))));
    const gone = Promise.all([orphan, elsewhere].map((c) => new Promise((r) => c.once('exit', r))));
    const rt2 = new ProcessRuntime({ rootDir: root2, nodeName: 'n1', nodeIP: '127.0.0.1', log: () => {} });
    expect(rt2.cleanupOrphans()).toBe(2);
    await gone;
    expect(bystander.exitCode).toBeNull();
    expect(existsSync(join(root2, 'pods', 'old-uid'))).toBe(false);
    bystander.kill('SIGKILL');
  });

  it('a failing command under OnFailure restarts with backoff; previous shows the last run', async () => {
    const marker = join(root, 'runs');
    const p = pod([{ name: 'c', command: ['sh', '-c', `echo run >> ${marker}; echo "run $(wc -l < ${marker})"; [ $(wc -l < ${marker}) -ge 3 ]`] }], 'OnFailure');
    await rt.syncPod(p);
    const st = await until(() => rt.podStatus(p.metadata.uid)?.find((c) => c.state === 'terminated' && c.exitCode === 0));
    expect(st.restartCount).toBe(2);
    expect(st.lastTerminated).toMatchObject({ exitCode: 1, reason: 'Error' });
    const prev = await text(await rt.logs({ namespace: 'default', pod: p.metadata.name, uid: '', container: 'c' }, { previous: true }, new AbortController().signal));
    expect(prev.trim()).toBe('run 2');
    // kubelet's container GC: the current and the previous instance's logs are kept, no older
    expect(readdirSync(join(root, 'pods', p.metadata.uid, 'logs', 'c')).sort()).toEqual(['1.log', '2.log']);
  });

  it('an unknown command ends with StartError; no command runs sleep infinity', async () => {
    const p = pod([{ name: 'c', command: ['/does/not/exist'] }]);
    await rt.syncPod(p);
    const st = await until(() => rt.podStatus(p.metadata.uid)?.find((c) => c.state === 'terminated'));
    expect(st).toMatchObject({ exitCode: 128, reason: 'StartError' });
    expect(containerCommand({}, {})).toEqual(['sleep', 'infinity']);
    expect(containerCommand({ args: ['a', '$(X)'] }, { X: 'x' })).toEqual(['a', 'x']);
    expect(expandVars('$$(X) $(Y) $(X)', { X: '1' })).toBe('$(X) $(Y) 1');
  });

  it('exec runs beside the container; readiness follows a tcp probe; checkpoint archives; kill stops', async () => {
    const srv = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => srv.once('listening', r));
    const port = (srv.address() as any).port;
    const p = pod([{ name: 'c', command: ['sh', '-c', 'echo state > data.txt; exec sleep 1000'], env: [{ name: 'K', value: 'v' }], readinessProbe: { tcpSocket: { port }, periodSeconds: 1 } }], 'Always');
    await rt.syncPod(p);
    await until(() => rt.podStatus(p.metadata.uid)?.[0].ready);
    const ref = { namespace: 'default', pod: p.metadata.name, uid: p.metadata.uid, container: 'c' };
    const ex = await rt.exec(ref, ['sh', '-c', 'echo $K; cat data.txt; exit 3'], { stdin: false, stdout: true, stderr: true, tty: false });
    const out = text(ex.stdout!);
    expect(await ex.exit).toEqual({ code: 3 });
    expect(await out).toBe('v\nstate\n');
    srv.close();
    await until(() => rt.podStatus(p.metadata.uid)?.[0].ready === false, 15_000);

    const archive = join(root, 'cp.tar');
    await rt.checkpoint(ref, archive);
    expect(statSync(archive).mode & 0o777).toBe(0o600);
    const names: string[] = [];
    let state: any;
    await new Promise<void>((res, rej) => {
      const x = extract();
      x.on('entry', (h, s, next) => {
        names.push(h.name);
        let b = '';
        s.on('data', (d) => (b += d));
        s.on('end', () => {
          if (h.name === 'checkpoint.json') state = JSON.parse(b);
          next();
        });
      });
      x.on('finish', res);
      x.on('error', rej);
      x.end(readFileSync(archive));
    });
    expect(names).toEqual(expect.arrayContaining(['checkpoint.json', 'rootfs/', 'rootfs/data.txt']));
    expect(state.pod).toEqual({ namespace: 'default', name: p.metadata.name, uid: p.metadata.uid });
    expect(rt.podStatus(p.metadata.uid)?.[0].state).toBe('running'); // resumed
    await expect(rt.checkpoint({ ...ref, container: 'x' }, join(root, 'x.tar'))).rejects.toBeInstanceOf(RuntimeNotFoundError);

    await rt.killPod(p.metadata.uid, 5);
    expect(rt.podStatus(p.metadata.uid)).toBeUndefined();
  });

  it('checkpoint of a container that is not running is an error (not a not-found)', async () => {
    const p = pod([{ name: 'c', command: ['true'] }]);
    await rt.syncPod(p);
    await until(() => rt.podStatus(p.metadata.uid)?.[0].state === 'terminated');
    const e = await rt.checkpoint({ namespace: 'default', pod: p.metadata.name, uid: '', container: 'c' }, join(root, 'y.tar')).catch((x) => x);
    expect(e).toBeInstanceOf(Error);
    expect(e).not.toBeInstanceOf(RuntimeNotFoundError);
  });

  it('workingDir: the container, its exec and exec probes run there (made when missing); a relative one is CreateContainerError', async () => {
    const wd = join(root, 'work', 'dir');
    const p = pod([{ name: 'c', workingDir: wd, command: ['sh', '-c', 'pwd; exec sleep 100'], readinessProbe: { exec: { command: ['test', '-d', '../dir'] }, periodSeconds: 1 } }]);
    await rt.syncPod(p);
    await until(() => rt.podStatus(p.metadata.uid)?.[0].ready);
    const ref = { namespace: 'default', pod: p.metadata.name, uid: p.metadata.uid, container: 'c' };
    expect(await text(await rt.logs(ref, {}, new AbortController().signal))).toBe(`${wd}\n`);
    expect(statSync(wd).isDirectory()).toBe(true);
    const ex = await rt.exec(ref, ['pwd'], { stdin: false, stdout: true, stderr: false, tty: false });
    expect(await text(ex.stdout!)).toBe(`${wd}\n`);
    await rt.killPod(p.metadata.uid, 0);

    const bad = pod([{ name: 'c', workingDir: 'relative/dir', command: ['true'] }]);
    await rt.syncPod(bad);
    const st = await until(() => rt.podStatus(bad.metadata.uid)?.find((c) => c.reason === 'CreateContainerError'));
    expect(st).toMatchObject({ state: 'waiting', message: 'failed to create container: working directory "relative/dir" is not an absolute path' });
    await rt.killPod(bad.metadata.uid, 0);
  });

  it('exec with a tty: a resize sets the terminal size (SIGWINCH to the command)', async () => {
    const p = pod([{ name: 'c', command: ['sleep', '100'] }]);
    await rt.syncPod(p);
    await until(() => rt.podStatus(p.metadata.uid)?.[0].state === 'running');
    const ref = { namespace: 'default', pod: p.metadata.name, uid: p.metadata.uid, container: 'c' };
    // the command reports its size on each SIGWINCH (between its sleeps), and ends once a file "q" is there
    const ex = await rt.exec(ref, ['sh', '-c', 'trap \'echo size $(stty size)\' WINCH; echo ready; while :; do sleep 0.05; [ -e q ] && break; done; echo done'], { stdin: true, stdout: true, stderr: false, tty: true });
    let out = '';
    ex.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    await until(() => out.includes('ready'));
    ex.resize(120, 40);
    await until(() => out.includes('size 40 120'));
    ex.resize(80, 25);
    await until(() => out.includes('size 25 80'));
    writeFileSync(join(root, 'pods', p.metadata.uid, 'containers', 'c', 'q'), '');
    expect(await ex.exit).toEqual({ code: 0 });
    await rt.killPod(p.metadata.uid, 0);
  });
});
