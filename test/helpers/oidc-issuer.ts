// A local HTTPS OpenID provider for tests: a CA and a serving certificate for 127.0.0.1 made
// with openssl, the discovery document and the JWKS served by node:https, ID tokens signed
// with jose. Counts every request it serves, so a test can check the API server does not
// call it per API request.
import https from 'node:https';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT, exportJWK, generateKeyPair, type JWTPayload } from 'jose';

export interface TestIssuer {
  url: string;
  caFile: string;
  caPem: string;
  hits: { discovery: number; jwks: number };
  /** an ID token for these claims (iss, iat, exp one hour ahead by default), signed with the current key */
  sign(claims: JWTPayload, opts?: { kid?: string; expiresIn?: number }): Promise<string>;
  /** signs with a new key the JWKS does not publish until publish() */
  rotate(): Promise<{ kid: string; publish: () => void }>;
  close(): Promise<void>;
}

export async function startIssuer(): Promise<TestIssuer> {
  const dir = mkdtempSync(join(tmpdir(), 'oidc-issuer-'));
  const sh = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  sh(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=test-oidc-ca']);
  sh(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'tls.key', '-out', 'tls.csr', '-subj', '/CN=127.0.0.1']);
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  sh(['x509', '-req', '-in', 'tls.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'tls.crt', '-days', '2', '-extfile', 'ext.cnf']);
  const caPem = readFileSync(join(dir, 'ca.crt'), 'utf8');
  const keys: { kid: string; privateKey: CryptoKey; jwk: any }[] = [];
  const published = new Set<string>();
  const newKey = async (kid: string) => {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
    keys.push({ kid, privateKey: privateKey as CryptoKey, jwk });
    return kid;
  };
  published.add(await newKey('key-1'));
  const hits = { discovery: 0, jwks: 0 };
  let url = '';
  const server = https.createServer({ key: readFileSync(join(dir, 'tls.key')), cert: readFileSync(join(dir, 'tls.crt')) }, (req, res) => {
    if (req.url === '/.well-known/openid-configuration') {
      hits.discovery++;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ issuer: url, jwks_uri: `${url}/keys`, id_token_signing_alg_values_supported: ['RS256'], response_types_supported: ['id_token'], subject_types_supported: ['public'] }));
    } else if (req.url === '/keys') {
      hits.jwks++;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: keys.filter((k) => published.has(k.kid)).map((k) => k.jwk) }));
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `https://127.0.0.1:${(server.address() as any).port}`;
  let current = 'key-1';
  return {
    url,
    caFile: join(dir, 'ca.crt'),
    caPem,
    hits,
    async sign(claims, opts = {}) {
      const kid = opts.kid ?? current;
      const k = keys.find((x) => x.kid === kid)!;
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: url, iat: now, exp: now + (opts.expiresIn ?? 3600), ...claims }).setProtectedHeader({ alg: 'RS256', kid }).sign(k.privateKey);
    },
    async rotate() {
      const kid = await newKey(`key-${keys.length + 1}`);
      current = kid;
      return { kid, publish: () => published.add(kid) };
    },
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
