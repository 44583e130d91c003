// kube-controller-manager's certificate controllers, in process: csrsigning (the
// kubernetes.io/kube-apiserver-client, kube-apiserver-client-kubelet and kubelet-serving
// signers, with --cluster-signing-cert-file/--cluster-signing-key-file and
// --cluster-signing-duration; spec.expirationSeconds shortens it) and csrapproving (a
// kubelet client request is approved when its requester may create
// certificatesigningrequests/selfnodeclient, for its own node name, or /nodeclient, as
// kube's sarapprove asks with a SubjectAccessReview). An approved request a signer refuses
// gets the Failed condition (SignerValidationFailure) with the reason.
//
// Thread ownership: the front thread of the leader, driven by the cache layer's committed
// batches (Cacher.observe). Writes go through the generic store's status and approval
// subresources, so watchers see them.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Cacher } from '../storage/cacher.js';
import type { Targets } from '../api/targets.js';
import { entryObject, type ResourceCache, type WatchEvent } from '../../workers/watch/watch-cache.js';
import { objectKey, type ResourceTarget, type Store } from '../registry/store.js';
import type { AuthorizationAttributes, Decision } from '../http/filters/authorization.js';
import { caNameAndKeyId, issueCertificate, parseCsrPem, type ParsedCsr, type SigningCa } from '../certificates/x509.js';
import { bytesField } from '../certificates/csr-validation.js';
import { KUBE_APISERVER_CLIENT_KUBELET, SIGNERS, kubeletClientError, signerError } from '../certificates/signers.js';

/** kube's signer backdates certificates so that clocks a little behind accept them. */
const BACKDATE_MS = 5 * 60 * 1000;

export function loadSigningCa(certFile: string, keyFile: string): SigningCa {
  const cert = new X509Certificate(readFileSync(certFile));
  const key = createPrivateKey(readFileSync(keyFile));
  if (!cert.checkPrivateKey(key)) throw new Error(`--cluster-signing-key-file ${keyFile} does not match --cluster-signing-cert-file ${certFile}`);
  return { cert, ...caNameAndKeyId(cert), key };
}

const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const conditions = (o: any): any[] => (Array.isArray(o?.status?.conditions) ? o.status.conditions : []);
const has = (o: any, type: string) => conditions(o).some((c) => c?.type === type && c?.status === 'True');

export class CsrController {
  private t: ResourceTarget;
  private busy = new Set<string>();
  /** requests that changed while being synced: synced again after (the change may be our own write) */
  private again = new Set<string>();
  private stopped = false;

  constructor(
    private store: Store,
    private cacher: Cacher,
    targets: Targets,
    private opts: {
      /** the signing CA; null: no signer runs (only the approver) */
      ca: SigningCa | null;
      durationSeconds: number;
      /** the server's authorizer, for the approver's SubjectAccessReviews (null: approver off) */
      authorize: ((a: AuthorizationAttributes) => Decision | Promise<Decision>) | null;
    },
  ) {
    this.t = targets.resolve('certificates.k8s.io', 'v1', 'certificatesigningrequests')!;
  }

  async start(): Promise<void> {
    this.cacher.observe((cache, evs) => this.onEvents(cache, evs));
    await Promise.all([...this.store.cacheOf(this.t).items.values()].map((e) => this.sync(e.name)));
  }

  stop(): void {
    this.stopped = true;
  }

  private onEvents(cache: ResourceCache, evs: WatchEvent[]): void {
    if (cache.gr !== this.t.gr) return;
    for (const ev of evs) if (ev.type !== 'DELETED') void this.sync(ev.entry.name);
  }

  private current(name: string): any {
    const e = this.store.cacheOf(this.t).items.get(objectKey('', name));
    return e ? entryObject(e) : undefined;
  }

  private async sync(name: string): Promise<void> {
    if (this.stopped) return;
    if (this.busy.has(name)) {
      this.again.add(name);
      return;
    }
    this.busy.add(name);
    try {
      const csr = this.current(name);
      if (!csr || csr.metadata?.deletionTimestamp || bytesField(csr.status?.certificate)?.length) return;
      let parsed: ParsedCsr;
      try {
        parsed = parseCsrPem(bytesField(csr.spec?.request)!.toString('latin1'));
      } catch {
        return;
      }
      const approved = has(csr, 'Approved');
      const denied = has(csr, 'Denied');
      if (!approved && !denied) await this.approve(csr, parsed);
      else if (approved && !denied && !has(csr, 'Failed')) await this.sign(csr, parsed);
    } catch (e) {
      if (!this.stopped) console.warn(`W csr ${name}: ${(e as Error).message}`);
    } finally {
      this.busy.delete(name);
      if (this.again.delete(name)) void this.sync(name);
    }
  }

  /** kube's sarapprove: selfnodeclient for a node's own name, then nodeclient. */
  private async approve(csr: any, parsed: ParsedCsr): Promise<void> {
    if (!this.opts.authorize || csr.spec.signerName !== KUBE_APISERVER_CLIENT_KUBELET) return;
    if (kubeletClientError(parsed, csr.spec.usages ?? []) !== null) return;
    const recognizers: Array<[string, string]> = [];
    if (csr.spec.username === parsed.commonName) recognizers.push(['selfnodeclient', 'Auto approving self kubelet client certificate after SubjectAccessReview.']);
    recognizers.push(['nodeclient', 'Auto approving kubelet client certificate after SubjectAccessReview.']);
    for (const [subresource, message] of recognizers) {
      const d = await this.opts.authorize({
        user: { name: csr.spec.username ?? '', uid: csr.spec.uid ?? '', groups: csr.spec.groups ?? [], ...(csr.spec.extra ? { extra: csr.spec.extra } : {}) } as any,
        verb: 'create',
        resourceRequest: true,
        apiGroup: 'certificates.k8s.io',
        resource: 'certificatesigningrequests',
        subresource,
        namespace: '',
        name: '',
        path: '',
      });
        if (!d.allowed) continue;
      await this.store.guaranteedUpdate(this.t, '', csr.metadata.name, { dryRun: false, subresource: 'approval' }, (o) => {
        if (has(o, 'Approved') || has(o, 'Denied')) return o;
        o.status ??= {};
        o.status.conditions = [...conditions(o), { type: 'Approved', status: 'True', reason: 'AutoApproved', message, lastUpdateTime: now() }];
        return o;
      });
      return;
    }
  }

  private async sign(csr: any, parsed: ParsedCsr): Promise<void> {
    const ca = this.opts.ca;
    if (!ca || !SIGNERS.includes(csr.spec.signerName)) return;
    const usages: string[] = csr.spec.usages ?? [];
    const err = signerError(csr.spec.signerName, parsed, usages);
    let patch: (o: any) => void;
    if (err) {
      patch = (o) => {
        o.status.conditions = [...conditions(o), { type: 'Failed', status: 'True', reason: 'SignerValidationFailure', message: err, lastUpdateTime: now() }];
      };
    } else {
      let ttl = this.opts.durationSeconds;
      if (typeof csr.spec.expirationSeconds === 'number') ttl = Math.min(ttl, csr.spec.expirationSeconds);
      const t = Date.now();
      let notAfter = new Date(t + ttl * 1000);
      const caEnd = new Date(ca.cert.validTo);
      if (caEnd < notAfter) notAfter = caEnd;
      const pem = issueCertificate(ca, parsed, { usages, notBefore: new Date(t - BACKDATE_MS), notAfter, sans: true });
      const cert = Buffer.from(pem).toString('base64');
      patch = (o) => {
        o.status.certificate = cert;
      };
    }
    await this.store.guaranteedUpdate(this.t, '', csr.metadata.name, { dryRun: false, subresource: 'status' }, (o) => {
      o.status ??= {};
      if (bytesField(o.status.certificate)?.length || has(o, 'Failed')) return o;
      patch(o);
      return o;
    });
  }
}
