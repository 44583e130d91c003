// The aggregated servers' OpenAPI: kube-aggregator's OpenAPI controllers (openapi/ for v2,
// openapiv3/ for v3). Each APIService's backend is asked for /openapi/v2 (with the last
// ETag), and for its /openapi/v3 index, then the document its index gives for
// apis/<group>/<version>; each minute and whenever the APIService changes. What a failed
// download had is kept. The server's own documents take these in (src/api/openapi-handler.ts):
// v2 paths and definitions merged (ours win a name both have), v3 one more group-version.
//
// Thread ownership: one per front thread, fed by that thread's Aggregator.
import { createHash } from 'node:crypto';
import type { APIServiceView } from './apiservice.js';
import type { BackendFetch } from './discovery-manager.js';
import { ResyncQueue } from './resync-queue.js';

interface Downloaded {
  v2?: { etag: string; spec: any };
  v3?: { body: string; hash: string };
}

export interface AggregatedOpenApi {
  /** the backends' swagger 2.0 documents, in APIService name order */
  v2Specs(): any[];
  /** "apis/<group>/<version>" -> the backend's v3 document of that group-version */
  v3Docs(): Map<string, { body: string; hash: string }>;
}

export class OpenApiDownloader implements AggregatedOpenApi {
  private services = new Map<string, APIServiceView>();
  private docs = new Map<string, Downloaded>();
  private queue: ResyncQueue;

  constructor(
    private fetch: BackendFetch,
    private changed: () => void,
    refreshMs = 60_000,
  ) {
    this.queue = new ResyncQueue((name) => this.sync(name), { periodMs: refreshMs, keys: () => this.services.keys(), minBackoffMs: 500, maxBackoffMs: refreshMs });
  }

  start(): void {
    this.queue.start();
  }

  stop(): void {
    this.queue.stop();
  }

  update(views: APIServiceView[]): void {
    const seen = new Set<string>();
    for (const v of views) {
      seen.add(v.name);
      const cur = this.services.get(v.name);
      this.services.set(v.name, v);
      if (!cur || cur.resourceVersion !== v.resourceVersion) this.queue.add(v.name);
    }
    let removed = false;
    for (const name of [...this.services.keys()]) {
      if (seen.has(name)) continue;
      this.services.delete(name);
      removed = this.docs.delete(name) || removed;
    }
    if (removed) this.changed();
  }

  v2Specs(): any[] {
    return [...this.docs.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).flatMap(([, d]) => (d.v2 ? [d.v2.spec] : []));
  }

  v3Docs(): Map<string, { body: string; hash: string }> {
    const out = new Map<string, { body: string; hash: string }>();
    for (const [name, d] of this.docs) {
      const s = this.services.get(name);
      if (s && d.v3) out.set(`apis/${s.group}/${s.version}`, d.v3);
    }
    return out;
  }

  private async sync(name: string): Promise<boolean> {
    const s = this.services.get(name);
    if (!s) return true;
    if (!s.available) return true; // (fetched again when it becomes available: the APIService changes)
    const had = this.docs.get(name) ?? {};
    const next: Downloaded = { ...had };
    let ok = true;
    const headers = { 'x-remote-user': 'system:aggregator', 'x-remote-group': ['system:masters'] };
    try {
      const r = await this.fetch(s, '/openapi/v2', { ...headers, accept: 'application/json', ...(had.v2?.etag ? { 'if-none-match': had.v2.etag } : {}) });
      if (r.status === 200) next.v2 = { etag: String(r.headers['etag'] ?? ''), spec: JSON.parse(r.body.toString('utf8')) };
      else if (r.status !== 304) ok = false;
    } catch {
      ok = false;
    }
    try {
      const root = await this.fetch(s, '/openapi/v3', { ...headers, accept: 'application/json' });
      const url = root.status === 200 ? JSON.parse(root.body.toString('utf8'))?.paths?.[`apis/${s.group}/${s.version}`]?.serverRelativeURL : undefined;
      if (typeof url === 'string' && url.startsWith('/')) {
        const d = await this.fetch(s, url, { ...headers, accept: 'application/json' });
        if (d.status === 200) {
          const body = d.body.toString('utf8');
          JSON.parse(body); // (a document that is not JSON is not served)
          next.v3 = { body, hash: createHash('sha512').update(body).digest('hex').toUpperCase() };
        } else ok = false;
      }
    } catch {
      ok = false;
    }
    if (this.services.get(name) !== s) return ok;
    const before = JSON.stringify([had.v2?.etag, had.v2 && !had.v2.etag ? had.v2.spec : undefined, had.v3?.hash]);
    const after = JSON.stringify([next.v2?.etag, next.v2 && !next.v2.etag ? next.v2.spec : undefined, next.v3?.hash]);
    this.docs.set(name, next);
    if (before !== after || (next.v2 && !had.v2)) this.changed();
    return ok;
  }
}

/** Merges the backends' swagger 2.0 documents into ours: their paths and definitions, ours winning a name both have. */
export function mergeOpenApiV2(ours: any, specs: any[]): any {
  for (const spec of specs) {
    for (const [p, item] of Object.entries(spec?.paths ?? {})) if (!(p in ours.paths)) ours.paths[p] = item;
    for (const [d, def] of Object.entries(spec?.definitions ?? {})) if (!(d in ours.definitions)) ours.definitions[d] = def;
  }
  return ours;
}
