// The serving certificate. Given --tls-cert-file/--tls-private-key-file, those are used.
// Otherwise a CA and a serving certificate signed by it are generated once in --cert-dir
// (as kube-apiserver does with its self-signed fallback), with SANs for the bind address,
// localhost and the in-cluster service names. Generation uses the openssl command.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Every file generation leaves in the cert dir (the permission pass at start-up closes these, and only these). */
export const GENERATED_CERT_FILES = new Set(['apiserver.crt', 'apiserver.key', 'apiserver.key.ec', 'apiserver.csr', 'ca.crt', 'ca.key', 'ca.srl', 'san.ext']);

export interface ServingCert {
  certFile: string;
  keyFile: string;
  /** PEM of the authority clients should trust */
  caPem: string;
}

function openssl(args: string[], cwd: string): void {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    const err = e as { code?: string; stderr?: Buffer };
    if (err.code === 'ENOENT') throw new Error('generating the self-signed serving certificate needs the openssl command; install it or pass --tls-cert-file and --tls-private-key-file');
    throw new Error(`openssl ${args[0]} failed: ${err.stderr?.toString() ?? e}`);
  }
}

export function ensureServingCert(opts: { certDir: string; tlsCertFile: string; tlsPrivateKeyFile: string; bindAddress: string }): ServingCert {
  if (opts.tlsCertFile) {
    for (const f of [opts.tlsCertFile, opts.tlsPrivateKeyFile]) if (!existsSync(f)) throw new Error(`no such file: ${f}`);
    const pem = readFileSync(opts.tlsCertFile, 'utf8');
    // The last certificate of the chain file is the closest to a root that we have.
    const certs = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g) ?? [pem];
    return { certFile: opts.tlsCertFile, keyFile: opts.tlsPrivateKeyFile, caPem: certs[certs.length - 1] };
  }
  const dir = opts.certDir;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const certFile = join(dir, 'apiserver.crt');
  const keyFile = join(dir, 'apiserver.key');
  const caFile = join(dir, 'ca.crt');
  if (!existsSync(certFile) || !existsSync(keyFile) || !existsSync(caFile)) {
    const sans = ['DNS:localhost', 'DNS:kubernetes', 'DNS:kubernetes.default', 'DNS:kubernetes.default.svc', 'DNS:kubernetes.default.svc.cluster.local', 'IP:127.0.0.1', 'IP:::1', 'IP:10.96.0.1'];
    if (opts.bindAddress !== '0.0.0.0' && opts.bindAddress !== '127.0.0.1' && opts.bindAddress !== '::') sans.push(`IP:${opts.bindAddress}`);
    writeFileSync(join(dir, 'san.ext'), `subjectAltName=${sans.join(',')}\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n`);
    openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key'], dir);
    openssl(['req', '-x509', '-new', '-key', 'ca.key', '-sha256', '-days', '3650', '-subj', '/CN=kubeshard-ca@' + Math.floor(Date.now() / 1000), '-out', 'ca.crt'], dir);
    openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'apiserver.key.ec'], dir);
    // uSockets reads PKCS#8 or SEC1 keys alike; PKCS#8 is the portable form.
    openssl(['pkcs8', '-topk8', '-nocrypt', '-in', 'apiserver.key.ec', '-out', 'apiserver.key'], dir);
    openssl(['req', '-new', '-key', 'apiserver.key', '-subj', '/CN=localhost@' + Math.floor(Date.now() / 1000), '-out', 'apiserver.csr'], dir);
    openssl(['x509', '-req', '-in', 'apiserver.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '3650', '-sha256', '-extfile', 'san.ext', '-out', 'apiserver.crt'], dir);
  }
  return { certFile, keyFile, caPem: readFileSync(caFile, 'utf8') };
}
