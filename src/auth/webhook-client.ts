// The client of an authentication or authorization webhook (kube's util/webhook
// GenericWebhook over a kubeconfig file): the kubeconfig's cluster (server, certificate
// authority) and user (client certificate and key, or a bearer token), one POST of a review
// object per call, retried with kube's default backoff (500ms, x1.5, 5 tries) on connection
// errors, 429 and 5xx answers.
//
// Thread ownership: the front thread that made it; one keep-alive agent per webhook.
import https from 'node:https';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { parse as parseYaml } from 'yaml';

/** The most of a webhook's answer (a TokenReview or SubjectAccessReview) that is read. */
const MAX_RESPONSE_BYTES = 4 << 20;

export interface WebhookTarget {
  url: URL;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  token?: string;
  insecure?: boolean;
}

function fileOrData(base: string, file: unknown, data: unknown): Buffer | undefined {
  if (typeof data === 'string' && data) return Buffer.from(data, 'base64');
  if (typeof file === 'string' && file) return readFileSync(isAbsolute(file) ? file : join(base, file));
  return undefined;
}

/** Reads the kubeconfig (YAML or JSON): its current context's cluster and user, else the first ones. */
export function loadWebhookKubeconfig(path: string): WebhookTarget {
  let cfg: any;
  try {
    cfg = parseYaml(readFileSync(path, 'utf8'));
  } catch (e: any) {
    throw new Error(`invalid configuration: ${path}: ${e?.message ?? e}`);
  }
  const base = dirname(path);
  const ctx = (cfg?.contexts ?? []).find((c: any) => c?.name === cfg?.['current-context'])?.context;
  const cluster = ((ctx ? (cfg?.clusters ?? []).find((c: any) => c?.name === ctx.cluster) : cfg?.clusters?.[0]) ?? cfg?.clusters?.[0])?.cluster;
  const user = ((ctx ? (cfg?.users ?? []).find((u: any) => u?.name === ctx.user) : cfg?.users?.[0]) ?? cfg?.users?.[0])?.user ?? {};
  if (!cluster?.server) throw new Error(`invalid configuration: ${path}: no server found for cluster`);
  let url: URL;
  try {
    url = new URL(cluster.server);
  } catch {
    throw new Error(`invalid configuration: ${path}: invalid server URL ${JSON.stringify(cluster.server)}`);
  }
  return {
    url,
    ca: fileOrData(base, cluster['certificate-authority'], cluster['certificate-authority-data']),
    cert: fileOrData(base, user['client-certificate'], user['client-certificate-data']),
    key: fileOrData(base, user['client-key'], user['client-key-data']),
    token: typeof user.token === 'string' && user.token ? user.token : undefined,
    insecure: cluster['insecure-skip-tls-verify'] === true,
  };
}

export class WebhookStatusError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class WebhookClient {
  private agent: http.Agent;
  constructor(
    readonly target: WebhookTarget,
    readonly timeoutMs = 30_000,
    readonly retries = 5,
  ) {
    const t = target;
    this.agent =
      t.url.protocol === 'https:'
        ? new https.Agent({ keepAlive: true, ca: t.ca, cert: t.cert, key: t.key, rejectUnauthorized: !t.insecure })
        : new http.Agent({ keepAlive: true });
  }

  /** POSTs the review and returns the decoded answer; retried as kube's WithExponentialBackoff. */
  async post(review: unknown): Promise<any> {
    const body = Buffer.from(JSON.stringify(review));
    let delay = 500;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(body);
      } catch (e) {
        const retriable = !(e instanceof WebhookStatusError) || e.code === 429 || e.code >= 500;
        if (!retriable || attempt >= this.retries) throw e;
        await sleep(delay * (1 + Math.random() * 0.2));
        delay *= 1.5;
      }
    }
  }

  private once(body: Buffer): Promise<any> {
    const t = this.target;
    const mod = t.url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = mod.request(
        t.url,
        {
          method: 'POST',
          agent: this.agent,
          timeout: this.timeoutMs,
          headers: {
            'content-type': 'application/json',
            accept: 'application/json',
            'content-length': body.length,
            ...(t.token ? { authorization: `Bearer ${t.token}` } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            // a review's answer is small: a webhook that sends more is cut off, not buffered
            size += c.length;
            if (size > MAX_RESPONSE_BYTES) req.destroy(new Error(`response from ${t.url.origin} is larger than ${MAX_RESPONSE_BYTES} bytes`));
            else chunks.push(c);
          });
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const code = res.statusCode ?? 0;
            if (code < 200 || code > 299) {
              let msg = `the server responded with the status code ${code} but did not return more information`;
              try {
                const st = JSON.parse(text);
                if (st?.kind === 'Status' && st.message) msg = st.message;
              } catch {
                /* not a Status */
              }
              reject(new WebhookStatusError(code, msg));
              return;
            }
            try {
              resolve(JSON.parse(text));
            } catch (e: any) {
              reject(new Error(`unable to decode the webhook's answer: ${e?.message ?? e}`));
            }
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`Post "${t.url.href}": context deadline exceeded`)));
      req.on('error', reject);
      req.end(body);
    });
  }
}
