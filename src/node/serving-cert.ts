// The agent's serving certificate when none is given (--tls-cert-file and
// --tls-private-key-file unset): a self-signed one for the host name and node IP, made
// once with the openssl command and kept in <cert-dir> (kubelet's <cert-dir>/kubelet.crt
// and kubelet.key, cert-dir defaulting to <root-dir>/pki), 0600 in a 0700 directory.
//
// Thread ownership: the agent's main thread, at start-up.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';

export function selfSignedCert(certDir: string, hostname: string, nodeIP: string): { cert: Buffer; key: Buffer; certFile: string; keyFile: string } {
  const certFile = join(certDir, 'kubelet.crt');
  const keyFile = join(certDir, 'kubelet.key');
  if (!existsSync(certFile) || !existsSync(keyFile)) {
    mkdirSync(certDir, { recursive: true, mode: 0o700 });
    const sans = [`DNS:${hostname}`, isIP(nodeIP) ? `IP:${nodeIP}` : `DNS:${nodeIP}`];
    if (nodeIP !== '127.0.0.1') sans.push('IP:127.0.0.1');
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '365', '-subj', `/CN=${hostname}@${Math.floor(Date.now() / 1000)}`, '-addext', `subjectAltName=${sans.join(',')}`, '-addext', 'extendedKeyUsage=serverAuth'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    chmodSync(keyFile, 0o600);
    chmodSync(certFile, 0o600);
  }
  return { cert: readFileSync(certFile), key: readFileSync(keyFile), certFile, keyFile };
}
