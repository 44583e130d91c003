// The node agent's client of the API server: a kubeconfig (bearer token or token file,
// client certificate, CA or insecure-skip-tls-verify), JSON requests over node:https with
// one keep-alive agent, and watches as newline-delimited JSON streams. The agent reaches
// the server only as a client, as kubelet does (it imports nothing from the server).
//
// Thread ownership: the agent's main thread.
import https from 'node:https';
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';

export interface Credentials {
  server: string;
  ca?: string | Buffer;
  insecure?: boolean;
  token?: string;
  tokenFile?: string;
  cert?: string | Buffer;
  key?: string | Buffer;
}

/** The current context's cluster and user of a kubeconfig file (paths relative to the file). */
export function loadKubeconfig(path: string): Credentials {
  const doc: any = parseYaml(readFileSync(path, 'utf8')) ?? {};
  const base = dirname(path);
  const rel = (p: string) => (isAbsolute(p) ? p : resolve(base, p));
  const ctxName = doc['current-context'];
  const ctx = (doc.contexts ?? []).find((c: any) => c.name === ctxName)?.context ?? doc.contexts?.[0]?.context ?? {};
  const cluster = (doc.clusters ?? []).find((c: any) => c.name === ctx.cluster)?.cluster ?? doc.clusters?.[0]?.cluster;
  const user = (doc.users ?? []).find((u: any) => u.name === ctx.user)?.user ?? doc.users?.[0]?.user ?? {};
  if (!cluster?.server) throw new Error(`invalid kubeconfig ${path}: no cluster server`);
  const c: Credentials = { server: String(cluster.server).replace(/\/$/, '') };
  if (cluster['certificate-authority-data']) c.ca = Buffer.from(cluster['certificate-authority-data'], 'base64');
  else if (cluster['certificate-authority']) c.ca = readFileSync(rel(cluster['certificate-authority']));
  if (cluster['insecure-skip-tls-verify']) c.insecure = true;
  if (user.token) c.token = user.token;
  if (user.tokenFile) c.tokenFile = rel(user.tokenFile);
  if (user['client-certificate-data']) c.cert = Buffer.from(user['client-certificate-data'], 'base64');
  else if (user['client-certificate']) c.cert = readFileSync(rel(user['client-certificate']));
  if (user['client-key-data']) c.key = Buffer.from(user['client-key-data'], 'base64');
  else if (user['client-key']) c.key = readFileSync(rel(user['client-key']));
  return c;
}

/** A failed request: the status code and the Status the server answered. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly status: any,
  ) {
    super(`${code} ${status?.reason ?? ''}: ${status?.message ?? JSON.stringify(status)}`);
  }
  get reason(): string | undefined {
    return this.status?.reason;
  }
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: any;
}

export class ApiClient {
  readonly server: URL;
  private readonly agent: https.Agent;
  private readonly creds: Credentials;

  constructor(creds: Credentials, readonly userAgent = 'kubeshard-node/v1.33.0') {
    this.creds = creds;
    this.server = new URL(creds.server);
    this.agent = new https.Agent({
      keepAlive: true,
      maxSockets: 16,
      ca: creds.ca,
      cert: creds.cert,
      key: creds.key,
      rejectUnauthorized: !creds.insecure,
    });
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = { accept: 'application/json', 'user-agent': this.userAgent, ...extra };
    const token = this.creds.tokenFile ? readFileSync(this.creds.tokenFile, 'utf8').trim() : this.creds.token;
    if (token) h.authorization = `Bearer ${token}`;
    return h;
  }

  /** One request; JSON in and out. Resolves with the body, rejects with an ApiError on a status >= 300. */
  request<T = any>(method: string, path: string, body?: unknown, contentType = 'application/json', timeoutMs = 30_000): Promise<T> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise<T>((res, rej) => {
      const req = https.request(
        {
          host: this.server.hostname,
          port: this.server.port || 443,
          method,
          path,
          agent: this.agent,
          timeout: timeoutMs,
          headers: this.headers(payload ? { 'content-type': contentType, 'content-length': String(payload.length) } : {}),
        },
        (r) => {
          const chunks: Buffer[] = [];
          r.on('data', (c) => chunks.push(c));
          r.on('error', rej);
          r.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: any = text;
            try {
              parsed = text ? JSON.parse(text) : undefined;
            } catch {
              // a non-JSON answer (a proxy's error page): kept as text
            }
            if ((r.statusCode ?? 500) >= 300) rej(new ApiError(r.statusCode ?? 500, parsed));
            else res(parsed as T);
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`request ${method} ${path} timed out`)));
      req.on('error', rej);
      if (payload) req.write(payload);
      req.end();
    });
  }

  get<T = any>(path: string): Promise<T> {
    return this.request('GET', path);
  }
  post<T = any>(path: string, body: unknown): Promise<T> {
    return this.request('POST', path, body);
  }
  put<T = any>(path: string, body: unknown): Promise<T> {
    return this.request('PUT', path, body);
  }
  patch<T = any>(path: string, body: unknown, type: 'merge' | 'strategic' = 'merge'): Promise<T> {
    return this.request('PATCH', path, body, type === 'merge' ? 'application/merge-patch+json' : 'application/strategic-merge-patch+json');
  }
  delete<T = any>(path: string, body?: unknown): Promise<T> {
    return this.request('DELETE', path, body);
  }

  /**
   * A watch (path with its query, watch=1 added): calls onEvent per event until the server
   * ends it, the signal aborts it, or it fails. Resolves when it has ended (rejects on a
   * status >= 300 or a transport error).
   */
  watch(path: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    const sep = path.includes('?') ? '&' : '?';
    return new Promise<void>((res, rej) => {
      const req = https.request(
        { host: this.server.hostname, port: this.server.port || 443, method: 'GET', path: `${path}${sep}watch=1`, agent: this.agent, headers: this.headers(), signal },
        (r) => {
          if ((r.statusCode ?? 500) >= 300) {
            const chunks: Buffer[] = [];
            r.on('data', (c) => chunks.push(c));
            r.on('end', () => {
              let s: any = Buffer.concat(chunks).toString();
              try {
                s = JSON.parse(s);
              } catch {
                /* text */
              }
              rej(new ApiError(r.statusCode ?? 500, s));
            });
            return;
          }
          let buf = '';
          r.setEncoding('utf8');
          r.on('data', (c: string) => {
            buf += c;
            let i;
            while ((i = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, i).trim();
              buf = buf.slice(i + 1);
              if (!line) continue;
              try {
                onEvent(JSON.parse(line));
              } catch (e) {
                req.destroy(e as Error);
                return;
              }
            }
          });
          r.on('end', () => res());
          r.on('error', (e) => (signal.aborted ? res() : rej(e)));
        },
      );
      req.on('error', (e) => (signal.aborted ? res() : rej(e)));
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
