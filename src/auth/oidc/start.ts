// Start-up of the authenticators issue 21 adds, from the options: the JWT issuers of
// --authentication-config or of the --oidc-* flags (kube's BuiltInAuthenticationOptions
// ToAuthenticationConfig), and the service-account verifying keys' fallback to
// --tls-private-key-file (kube-apiserver's completion of ServiceAccountAuthenticationOptions).
//
// Thread ownership: none (builds objects for the calling front thread).
import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ServerOptions } from '../../options.js';
import { FlagError } from '../../options.js';
import { JwtAuthenticators } from './jwt-authenticators.js';
import { jwtConfigFromFlags } from './jwt-config.js';
import { AuthenticationConfigError } from './authentication-config.js';
import { registerTokenAuthenticator } from '../authenticator.js';

/** How long start-up waits for the issuers' first key fetch (kube initialises asynchronously; a late issuer answers "not initialized"). */
const FIRST_FETCH_WAIT_MS = 5_000;

export async function buildJwtAuthenticators(o: ServerOptions, log: (m: string) => void, apiAudiences: string[]): Promise<JwtAuthenticators | undefined> {
  let set: JwtAuthenticators | undefined;
  if (o.authenticationConfigFile) {
    try {
      set = JwtAuthenticators.fromFile(o.authenticationConfigFile, {
        apiAudiences,
        log,
        disallowedIssuers: o.serviceAccountIssuers,
        serviceAccountIssuers: o.serviceAccountIssuers,
        reloadMs: Number(process.env.KUBESHARD_AUTHN_CONFIG_RELOAD_MS) || undefined,
      });
    } catch (e) {
      if (e instanceof AuthenticationConfigError) throw new FlagError(`failed to load authentication configuration from file ${JSON.stringify(o.authenticationConfigFile)}: ${e.message}`);
      throw e;
    }
    // kube's BuiltInAuthenticationOptions.ToAuthenticationConfig
    if (set.anonymous && o.anonymousAuthSet) {
      set.close();
      throw new FlagError('anonymous: Forbidden: --anonymous-auth flag cannot be set when anonymous field is configured in authentication configuration file');
    }
  } else if (o.oidc.issuerURL) {
    const cfg = jwtConfigFromFlags(o.oidc, (f) => readFileSync(f, 'utf8'));
    set = new JwtAuthenticators([cfg], { apiAudiences, log, serviceAccountIssuers: o.serviceAccountIssuers });
  }
  if (!set) return undefined;
  await Promise.race([set.start(), new Promise((r) => setTimeout(r, FIRST_FETCH_WAIT_MS).unref())]);
  return set;
}

/**
 * The files whose public keys verify service-account tokens: --service-account-key-file, or
 * else (as kube-apiserver) --tls-private-key-file when it holds a usable key; the signing
 * key's own public half is always among them, since kubeshard may generate that key.
 */
export function serviceAccountKeyFiles(o: ServerOptions, signingKeyFile: string, warn: boolean): string[] {
  if (o.serviceAccountKeyFiles.length) return o.serviceAccountKeyFiles;
  if (!o.tlsPrivateKeyFile) return [];
  try {
    const k = createPrivateKey(readFileSync(o.tlsPrivateKeyFile));
    if (k.asymmetricKeyType !== 'rsa' && k.asymmetricKeyType !== 'ec') throw new Error(`unsupported key type ${k.asymmetricKeyType}`);
  } catch {
    if (warn) console.warn('W --tls-private-key-file holds no RSA or ECDSA key: service account tokens are verified with the signing key only');
    return [];
  }
  return [o.tlsPrivateKeyFile, signingKeyFile];
}

// In the token union at kube's place (after bootstrap tokens, before the webhook): the
// issuers the server built from --oidc-* or --authentication-config, handed over in the context.
registerTokenAuthenticator('oidc', (ctx) => ctx.services.jwtAuthenticators as JwtAuthenticators | undefined);
