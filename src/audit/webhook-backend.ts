// The webhook backend (--audit-webhook-config-file): batches of events POSTed as an
// audit.k8s.io/v1 EventList to the server a kubeconfig file names (its current context's
// cluster, or the first; the user's token or client certificate authenticates us).
//
// A failed POST (no connection, a timeout, a 5xx or 429) is retried with exponential
// backoff from --audit-webhook-initial-backoff (factor 1.5, jitter 0.2, 5 tries), as kube's
// webhook client does. In the default batch mode this all happens off the request's path: a
// webhook that is down costs requests nothing, and its events are dropped after the last
// try (logged). Shutdown stops further retries.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Writer } from './backend.js';
import type { AuditEvent } from './event.js';

export interface WebhookTarget {
  url: URL;
  ca?: Buffer;
  insecure: boolean;
  token?: string;
  cert?: Buffer;
  key?: Buffer;
}

/** Reads the kubeconfig; a file kube could not use fails start-up with why. */
export function loadWebhookConfig(path: string): WebhookTarget {
  let doc: any;
  try {
    doc = parseYaml(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`invalid audit webhook config file "${path}": ${(e as Error).message}`);
  }
  const fail = (why: string) => new Error(`invalid audit webhook config file "${path}": ${why}`);
  if (!doc || typeof doc !== 'object') throw fail('not a kubeconfig');
  const ctxName = doc['current-context'];
  const ctx = (doc.contexts ?? []).find((c: any) => c?.name === ctxName)?.context;
  const cluster = (ctx ? (doc.clusters ?? []).find((c: any) => c?.name === ctx.cluster) : (doc.clusters ?? [])[0])?.cluster;
  const user = (ctx ? (doc.users ?? []).find((u: any) => u?.name === ctx.user) : (doc.users ?? [])[0])?.user ?? {};
  if (!cluster?.server) throw fail('no cluster with a server');
  let url: URL;
  try {
    url = new URL(cluster.server);
  } catch {
    throw fail(`bad server URL "${cluster.server}"`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw fail(`unsupported scheme of server "${cluster.server}"`);
  const base = dirname(resolve(path));
  const fileOrData = (file: unknown, data: unknown): Buffer | undefined => {
    if (typeof data === 'string' && data) return Buffer.from(data, 'base64');
    if (typeof file === 'string' && file) {
      try {
        return readFileSync(resolve(base, file));
      } catch (e) {
        throw fail((e as Error).message);
      }
    }
    return undefined;
  };
  return {
    url,
    ca: fileOrData(cluster['certificate-authority'], cluster['certificate-authority-data']),
    insecure: cluster['insecure-skip-tls-verify'] === true,
    token: typeof user.token === 'string' && user.token ? user.token : user.tokenFile ? readFileSync(resolve(base, user.tokenFile), 'utf8').trim() : undefined,
    cert: fileOrData(user['client-certificate'], user['client-certificate-data']),
    key: fileOrData(user['client-key'], user['client-key-data']),
  };
}

/** kube's webhook client timeout */
const REQUEST_TIMEOUT_MS = 30_000;
const BACKOFF_FACTOR = 1.5;
const BACKOFF_JITTER = 0.2;
const BACKOFF_STEPS = 5;

class RetryableError extends Error {}

export class WebhookWriter implements Writer {
  readonly name = 'webhook';
  private agent: http.Agent;
  private closing = false;
  private sleeps = new Set<() => void>();

  constructor(
    private t: WebhookTarget,
    /** seconds before the first retry */
    private initialBackoff: number,
    private apiVersion: string,
  ) {
    this.agent =
      t.url.protocol === 'https:'
        ? new https.Agent({ keepAlive: true, ca: t.ca, cert: t.cert, key: t.key, rejectUnauthorized: !t.insecure })
        : new http.Agent({ keepAlive: true });
  }

  async write(events: AuditEvent[]): Promise<boolean> {
    const body = Buffer.from(JSON.stringify({ kind: 'EventList', apiVersion: this.apiVersion, metadata: {}, items: events }));
    let delay = this.initialBackoff * 1000;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.post(body);
        return true;
      } catch (e) {
        if (!(e instanceof RetryableError) || attempt >= BACKOFF_STEPS || this.closing) throw e;
      }
      await this.sleep(delay * (1 + Math.random() * BACKOFF_JITTER));
      if (this.closing) throw new Error('audit webhook backend shut down before the events could be sent');
      delay *= BACKOFF_FACTOR;
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((res) => {
      const done = () => {
        clearTimeout(timer);
        this.sleeps.delete(done);
        res();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      this.sleeps.add(done);
    });
  }

  private post(body: Buffer): Promise<void> {
    const u = this.t.url;
    const mod = u.protocol === 'https:' ? https : http;
    const headers: Record<string, string | number> = { 'Content-Type': 'application/json', Accept: 'application/json', 'Content-Length': body.length };
    if (this.t.token) headers.Authorization = `Bearer ${this.t.token}`;
    return new Promise((resolveP, reject) => {
      const req = mod.request(
        { protocol: u.protocol, hostname: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method: 'POST', headers, agent: this.agent, timeout: REQUEST_TIMEOUT_MS },
        (res) => {
          res.resume();
          res.on('end', () => {
            const code = res.statusCode ?? 0;
            if (code >= 200 && code < 300) resolveP();
            else if (code >= 500 || code === 429) reject(new RetryableError(`the audit webhook answered ${code}`));
            else reject(new Error(`the audit webhook answered ${code}`));
          });
          res.on('error', (e) => reject(new RetryableError(e.message)));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', (e) => reject(new RetryableError(e.message)));
      req.end(body);
    });
  }

  /** Shutdown: a batch waiting for its next try gives up now (the try in flight finishes). */
  stopRetrying(): void {
    this.closing = true;
    for (const wake of [...this.sleeps]) wake();
  }

  async close(): Promise<void> {
    this.stopRetrying();
    this.agent.destroy();
  }
}
