// The node agent's TLS bootstrap (kubelet's --bootstrap-kubeconfig) against a server with
// the cluster signing CA, Node,RBAC and NodeRestriction: with a bootstrap token (a static
// token of system:bootstrap:abcdef in system:bootstrappers, bound to
// system:node-bootstrapper) the agent creates a CSR for
// kubernetes.io/kube-apiserver-client-kubelet as system:node:<name>; once
// `kubectl certificate approve` has it signed, the agent writes its kubeconfig and
// certificate (0600), logs in with the certificate, and its node is Ready. Restarted, it
// uses the kubeconfig it wrote and makes no new CSR.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { X509Certificate } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import { freePort, request, startServer, until, type TestServer } from './helpers/server.js';
import { kubectlOk, kubectlPath } from './helpers/kubectl.js';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const dir = mkdtempSync(join(tmpdir(), 'kubeshard-node-tls-bootstrap-'));
let s: TestServer;
const procs: ChildProcess[] = [];

function startAgent(args: string[]): { proc: ChildProcess; output: () => string } {
  const proc = spawn(process.execPath, [MAIN, 'node', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  procs.push(proc);
  return { proc, output: () => out };
}

async function stop(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  p.kill('SIGTERM');
  await new Promise((r) => p.once('exit', r));
}

beforeAll(async () => {
  kubectlPath();
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=cluster-signer'], { cwd: dir, stdio: 'ignore' });
  writeFileSync(join(dir, 'tokens.csv'), `abcdef.0123456789abcdef,system:bootstrap:abcdef,uid-boot,"system:bootstrappers"\n`);
  s = await startServer({
    args: [
      '--authorization-mode', 'Node,RBAC',
      '--token-auth-file', join(dir, 'tokens.csv'),
      '--client-ca-file', join(dir, 'ca.crt'),
      '--cluster-signing-cert-file', join(dir, 'ca.crt'),
      '--cluster-signing-key-file', join(dir, 'ca.key'),
      '--enable-admission-plugins', 'NodeRestriction',
    ],
  });
  await kubectlOk(s, ['create', 'clusterrolebinding', 'node-bootstrap', '--clusterrole=system:node-bootstrapper', '--group=system:bootstrappers']);
}, 90_000);

afterAll(async () => {
  for (const p of procs) await stop(p);
  await s?.stop();
  s?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('node agent TLS bootstrap', () => {
  it('gets a client certificate through an approved CSR, then runs as system:node:<name>', async () => {
    const boot = join(dir, 'bootstrap.kubeconfig');
    writeFileSync(boot, `apiVersion: v1\nkind: Config\nclusters:\n- name: ks\n  cluster:\n    server: ${s.url}\n    certificate-authority: ${join(s.dataDir, 'certs', 'ca.crt')}\nusers:\n- name: boot\n  user:\n    token: abcdef.0123456789abcdef\ncontexts:\n- name: ks\n  context: {cluster: ks, user: boot}\ncurrent-context: ks\n`);
    const kubeconfig = join(dir, 'node', 'kubelet.kubeconfig');
    const rootDir = join(dir, 'root');
    const port = await freePort();
    const args = ['--bootstrap-kubeconfig', boot, '--kubeconfig', kubeconfig, '--hostname-override', 'n3', '--node-ip', '127.0.0.1', '--root-dir', rootDir, '--port', String(port), '--healthz-port', '0', '--address', '127.0.0.1'];
    const a = startAgent(args);
    // the CSR, made by the bootstrap identity for the node's name
    const csr = await until(async () => {
      const list = (await request(s, 'GET', '/apis/certificates.k8s.io/v1/certificatesigningrequests')).json();
      return list.items?.find((c: any) => c.spec.username === 'system:bootstrap:abcdef');
    }, 20_000);
    expect(csr.metadata.name).toMatch(/^node-csr-/);
    expect(csr.spec.signerName).toBe('kubernetes.io/kube-apiserver-client-kubelet');
    expect(csr.spec.usages).toEqual(['digital signature', 'client auth']);
    expect(a.output()).not.toContain('is running');
    await kubectlOk(s, ['certificate', 'approve', csr.metadata.name]);
    await until(() => {
      if (a.proc.exitCode !== null) throw new Error(`agent exited ${a.proc.exitCode}:\n${a.output()}`);
      return a.output().includes('is running');
    }, 30_000);
    await until(async () => /\bn3\s+Ready\s/.test(await kubectlOk(s, ['get', 'nodes'])), 20_000);

    // what it wrote: a kubeconfig naming a certificate for system:node:n3, both private
    expect(statSync(kubeconfig).mode & 0o777).toBe(0o600);
    const pem = join(rootDir, 'pki', 'kubelet-client-current.pem');
    expect(statSync(pem).mode & 0o777).toBe(0o600);
    expect(readFileSync(kubeconfig, 'utf8')).toContain(`client-certificate: ${pem}`);
    const cert = new X509Certificate(readFileSync(pem));
    expect(cert.subject).toContain('CN=system:node:n3');
    expect(cert.subject).toContain('O=system:nodes');
    // the node's own writes were made with that identity (NodeRestriction let it create its Node and Lease)
    const lease = (await request(s, 'GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n3')).json();
    expect(lease.spec.holderIdentity).toBe('n3');

    // restarted: the kubeconfig it wrote is used, no second CSR
    await stop(a.proc);
    const b = startAgent([...args, '--client-ca-file', join(dir, 'ca.crt')]);
    await until(() => b.output().includes('is running'), 30_000);
    const csrs = (await request(s, 'GET', '/apis/certificates.k8s.io/v1/certificatesigningrequests')).json().items;
    expect(csrs).toHaveLength(1);

    // its HTTPS API takes client certificates of --client-ca-file (the server's
    // --kubelet-client-certificate), authorized by SubjectAccessReview; another CA's is a 401
    const ssl = (x: string[]) => execFileSync('openssl', x, { cwd: dir, stdio: 'ignore' });
    ssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'client.key', '-out', 'client.csr', '-subj', '/O=system:masters/CN=kube-apiserver-kubelet-client']);
    writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
    ssl(['x509', '-req', '-in', 'client.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'client.crt', '-days', '1', '-extfile', 'client.ext']);
    ssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'other.key', '-out', 'other.crt', '-days', '1', '-subj', '/O=system:masters/CN=intruder']);
    const get = (cert: string, key: string) =>
      new Promise<number>((res, rej) => {
        const req = httpsRequest({ host: '127.0.0.1', port, path: '/pods', rejectUnauthorized: false, cert: readFileSync(join(dir, cert)), key: readFileSync(join(dir, key)) }, (r) => {
          r.resume();
          res(r.statusCode!);
        });
        req.on('error', rej);
        req.end();
      });
    expect(await get('client.crt', 'client.key')).toBe(200);
    expect(await get('other.crt', 'other.key')).toBe(401);
  }, 120_000);
});
