// TLS bootstrap (kubelet's pkg/kubelet/certificate/bootstrap LoadClientCert): when the
// --kubeconfig file is missing (or its client certificate has expired) and a
// --bootstrap-kubeconfig is given, the agent
//   1. makes a key (ECDSA P-256) and a certificate request for CN=system:node:<node>,
//      O=system:nodes (the openssl command);
//   2. creates a CertificateSigningRequest with the bootstrap credentials: signer
//      kubernetes.io/kube-apiserver-client-kubelet, usages digital signature and client
//      auth, named node-csr-<hash of the request> (so a restart finds its own CSR again);
//   3. waits until it is approved and has status.certificate (a denial or failure ends it);
//   4. writes <cert-dir>/kubelet-client-current.pem (certificate then key, 0600) and a
//      kubeconfig at --kubeconfig naming it, with the bootstrap kubeconfig's server and CA.
// Certificate rotation is not done.
//
// Thread ownership: the agent's main thread, at start-up.
import { execFileSync } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ApiClient, ApiError, loadKubeconfig } from './api-client.js';

const SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';

/** Whether the kubeconfig exists and its client certificate (if it names one) is still valid. */
export function kubeconfigUsable(path: string): boolean {
  if (!existsSync(path)) return false;
  try {
    const c = loadKubeconfig(path);
    if (c.cert) {
      const x = new X509Certificate(c.cert);
      if (Date.parse(x.validTo) <= Date.now()) return false;
    }
    return true;
  } catch {
    return false;
  }
}

export interface BootstrapOptions {
  bootstrapKubeconfig: string;
  kubeconfig: string;
  certDir: string;
  nodeName: string;
  log: (m: string) => void;
  /** how long to wait for the certificate (kubelet waits an hour) */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Runs the bootstrap; resolves once --kubeconfig is written. */
export async function bootstrapClientCert(o: BootstrapOptions): Promise<void> {
  const boot = loadKubeconfig(o.bootstrapKubeconfig);
  const api = new ApiClient(boot);
  mkdirSync(o.certDir, { recursive: true, mode: 0o700 });
  // the key survives a restart while the CSR is pending (kubelet keeps kubelet-client.key.tmp)
  const keyFile = join(o.certDir, 'kubelet-client.key.tmp');
  if (!existsSync(keyFile)) execFileSync('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', keyFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  const key = readFileSync(keyFile, 'utf8');
  const csrPem = execFileSync('openssl', ['req', '-new', '-key', keyFile, '-subj', `/O=system:nodes/CN=system:node:${o.nodeName}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  // kubelet names the CSR after a digest of the request's public key and subject
  const name = `node-csr-${createHash('sha512').update(csrPem).digest('base64url').slice(0, 43)}`;
  const path = `/apis/certificates.k8s.io/v1/certificatesigningrequests/${name}`;
  try {
    await api.post('/apis/certificates.k8s.io/v1/certificatesigningrequests', {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name },
      spec: { request: Buffer.from(csrPem).toString('base64'), signerName: SIGNER, usages: ['digital signature', 'client auth'] },
    });
    o.log(`certificate signing request ${name} created`);
  } catch (e) {
    if (!(e instanceof ApiError && e.code === 409)) throw e;
  }
  const deadline = Date.now() + (o.timeoutMs ?? 3_600_000);
  let cert: string | undefined;
  while (!cert) {
    if (o.signal?.aborted) throw new Error('stopped');
    if (Date.now() > deadline) throw new Error(`timed out waiting for the certificate of ${name}`);
    let csr: any;
    try {
      csr = await api.get(path);
    } catch (e) {
      o.log(`reading ${name}: ${(e as Error).message}`);
    }
    const conds: any[] = csr?.status?.conditions ?? [];
    const bad = conds.find((c) => (c.type === 'Denied' || c.type === 'Failed') && c.status !== 'False');
    if (bad) throw new Error(`certificate signing request ${name} is ${bad.type.toLowerCase()}: ${bad.message ?? bad.reason ?? ''}`);
    if (csr?.status?.certificate && conds.some((c) => c.type === 'Approved')) cert = Buffer.from(csr.status.certificate, 'base64').toString('utf8');
    else await new Promise((r) => setTimeout(r, 500));
  }
  api.close();
  const pem = join(o.certDir, 'kubelet-client-current.pem');
  writeFileSync(pem + '.tmp', cert.trimEnd() + '\n' + key, { mode: 0o600 });
  renameSync(pem + '.tmp', pem);
  const ca = boot.ca ? `    certificate-authority-data: ${Buffer.from(boot.ca).toString('base64')}\n` : boot.insecure ? '    insecure-skip-tls-verify: true\n' : '';
  mkdirSync(dirname(o.kubeconfig), { recursive: true, mode: 0o700 });
  writeFileSync(
    o.kubeconfig,
    `apiVersion: v1\nkind: Config\nclusters:\n- name: default-cluster\n  cluster:\n    server: ${boot.server}\n${ca}users:\n- name: default-auth\n  user:\n    client-certificate: ${pem}\n    client-key: ${pem}\ncontexts:\n- name: default-context\n  context:\n    cluster: default-cluster\n    user: default-auth\n    namespace: default\ncurrent-context: default-context\n`,
    { mode: 0o600 },
  );
  o.log(`client certificate written to ${pem}; kubeconfig ${o.kubeconfig}`);
}
