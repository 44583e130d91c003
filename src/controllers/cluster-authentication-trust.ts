// kube-apiserver's cluster authentication trust controller
// (pkg/controlplane/controller/clusterauthenticationtrust): the ConfigMap
// kube-system/extension-apiserver-authentication tells aggregated API servers (metrics-server
// and the like) how this API server authenticates: the client CA (--client-ca-file) and the
// front proxy's CA, allowed names and identity headers (--requestheader-*). Each replica
// merges its own values into what is there (lists joined without repeats, certificates
// joined without repeats and without the expired ones), so several replicas with different
// CAs all appear. Written at start, again whenever the ConfigMap changes or goes, and when
// a client CA file is rewritten (update).
//
// Thread ownership: the main thread (one writer per replica), driven by the cache layer's
// committed batches.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Cacher } from '../storage/cacher.js';
import type { Targets } from '../api/targets.js';
import { objectKey, type ResourceTarget, type Store } from '../registry/store.js';
import { entryObject } from '../../workers/watch/watch-cache.js';
import type { RequestHeaderConfig } from '../auth/authenticators/requestheader.js';

const NAMESPACE = 'kube-system';
const NAME = 'extension-apiserver-authentication';
/** kube allows five minutes past NotAfter before a certificate counts as expired */
const EXPIRY_SLACK_MS = 5 * 60_000;

export interface AuthenticationTrust {
  /** PEM of --client-ca-file, or '' */
  clientCa: string;
  /** the front proxy's configuration, or null without --requestheader-client-ca-file */
  requestHeader: (RequestHeaderConfig & { caPem: string }) | null;
}

export function authenticationTrustFromFiles(clientCaFile: string, requestHeader: RequestHeaderConfig | null): AuthenticationTrust {
  return {
    clientCa: clientCaFile ? readFileSync(clientCaFile, 'utf8') : '',
    requestHeader: requestHeader ? { ...requestHeader, caPem: readFileSync(requestHeader.caFile, 'utf8') } : null,
  };
}

/** The PEM certificates of a bundle, in order. */
function pemBlocks(bundle: string | undefined): string[] {
  return bundle ? (bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? []) : [];
}

/** kube's combineCertLists: both bundles' certificates, the expired ones dropped, each once. */
export function combineCertBundles(a: string | undefined, b: string | undefined): string {
  const seen = new Set<string>();
  const out: string[] = [];
  const now = Date.now();
  for (const pem of [...pemBlocks(a), ...pemBlocks(b)]) {
    let raw: string;
    try {
      const c = new X509Certificate(pem);
      if (Date.parse(c.validTo) + EXPIRY_SLACK_MS < now) continue;
      raw = c.raw.toString('base64');
    } catch {
      continue;
    }
    if (seen.has(raw)) continue;
    seen.add(raw);
    out.push(pem);
  }
  return out.length ? out.join('\n') + '\n' : '';
}

/** kube's combineUniqueStringSlices over the JSON lists the ConfigMap holds. */
function combineLists(stored: string | undefined, mine: string[]): string[] {
  let had: string[] = [];
  try {
    const v = stored ? JSON.parse(stored) : [];
    if (Array.isArray(v)) had = v.filter((x) => typeof x === 'string');
  } catch {
    had = [];
  }
  return [...new Set([...had, ...mine])];
}

/** The ConfigMap's data with this server's values merged in (kube's getConfigMapDataFor). */
export function mergedTrustData(stored: Record<string, string> | undefined, mine: AuthenticationTrust): Record<string, string> {
  const s = stored ?? {};
  const data: Record<string, string> = {};
  const clientCa = combineCertBundles(s['client-ca-file'], mine.clientCa);
  if (clientCa) data['client-ca-file'] = clientCa;
  const rh = mine.requestHeader;
  const rhCa = combineCertBundles(s['requestheader-client-ca-file'], rh?.caPem);
  if (!rhCa) return data;
  data['requestheader-username-headers'] = JSON.stringify(combineLists(s['requestheader-username-headers'], rh?.usernameHeaders ?? []));
  data['requestheader-uid-headers'] = JSON.stringify(combineLists(s['requestheader-uid-headers'], rh?.uidHeaders ?? []));
  data['requestheader-group-headers'] = JSON.stringify(combineLists(s['requestheader-group-headers'], rh?.groupHeaders ?? []));
  data['requestheader-extra-headers-prefix'] = JSON.stringify(combineLists(s['requestheader-extra-headers-prefix'], rh?.extraHeaderPrefixes ?? []));
  data['requestheader-client-ca-file'] = rhCa;
  data['requestheader-allowed-names'] = JSON.stringify(combineLists(s['requestheader-allowed-names'], rh?.allowedNames ?? []));
  return data;
}

const sameData = (a: Record<string, string> | undefined, b: Record<string, string>): boolean => {
  const ka = Object.keys(a ?? {});
  return ka.length === Object.keys(b).length && ka.every((k) => a![k] === b[k]);
};

export class ClusterAuthenticationTrustController {
  private readonly t: ResourceTarget;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly store: Store,
    private readonly cacher: Cacher,
    targets: Targets,
    private mine: AuthenticationTrust,
  ) {
    this.t = targets.resolve('', 'v1', 'configmaps')!;
  }

  /** Writes the ConfigMap once, then keeps it whenever it changes or goes. */
  async start(): Promise<void> {
    this.unsubscribe = this.cacher.observe((cache, evs) => {
      if (cache.gr !== this.t.gr) return;
      if (evs.some((e) => e.entry.ns === NAMESPACE && e.entry.name === NAME)) void this.sync().catch(() => {});
    });
    await this.sync();
  }

  /**
   * This server's values changed (a client CA file was rewritten: kube's controller listens
   * to its CA providers): merged in as at start, so the new authority joins the ConfigMap
   * and the old one stays until it expires, as kube keeps it.
   */
  update(mine: AuthenticationTrust): Promise<void> {
    this.mine = mine;
    return this.sync();
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
  }

  /** One sync at a time; a change during one asks for another after it. */
  private sync(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          if (!this.stopped) await this.syncOnce();
        } while (this.again && !this.stopped);
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  private async syncOnce(): Promise<void> {
    const e = this.store.cacheOf(this.t).items.get(objectKey(NAMESPACE, NAME));
    const cur = e ? entryObject(e) : undefined;
    const data = mergedTrustData(cur?.data, this.mine);
    if (cur && sameData(cur.data, data)) return;
    if (!cur) {
      if (Object.keys(data).length === 0) return;
      try {
        await this.store.create(this.t, NAMESPACE, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: NAME, namespace: NAMESPACE }, data }, { dryRun: false });
      } catch (err) {
        // another replica created it meanwhile: its change comes back here and merges again
        if ((err as { code?: number }).code !== 409) throw err;
      }
      return;
    }
    await this.store.guaranteedUpdate(this.t, NAMESPACE, NAME, { dryRun: false, subresource: '' }, (o) => {
      delete o.metadata.resourceVersion;
      o.data = mergedTrustData(o.data, this.mine);
      return o;
    });
  }
}
