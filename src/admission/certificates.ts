// kube's certificate admission plugins (plugin/pkg/admission/certificates), default on:
// CertificateApproval (a write of certificatesigningrequests/approval needs `approve` on the
// request's signer: resource "signers" of certificates.k8s.io, named by the signerName or
// "<domain>/*"), CertificateSigning (a status write that changes status.certificate needs
// `sign` on it), and CertificateSubjectRestriction (no kube-apiserver-client request for the
// system:masters group).
//
// Thread ownership: the front thread; stateless (asks the server's authorizer).
import { AdmissionPlugin, forbidden, type Attributes, type ObjectSource } from './plugin.js';
import type { AuthorizationAttributes, Decision } from '../http/filters/authorization.js';
import type { UserInfo } from '../auth/user.js';
import { bytesField } from '../certificates/csr-validation.js';
import { parseCsrPem } from '../certificates/x509.js';
import { KUBE_APISERVER_CLIENT } from '../certificates/signers.js';

export type Authorize = (a: AuthorizationAttributes) => Decision;

const isCsr = (a: Attributes) => a.groupResource.group === 'certificates.k8s.io' && a.groupResource.resource === 'certificatesigningrequests';

/** kube's IsAuthorizedForSignerName: the verb on the signer by name, then on its domain's wildcard. */
export function authorizedForSigner(authorize: Authorize, user: UserInfo, verb: string, signerName: string): boolean {
  const base = { user, verb, resourceRequest: true, apiGroup: 'certificates.k8s.io', resource: 'signers', subresource: '', namespace: '', path: '' };
  if (authorize({ ...base, name: signerName }).allowed) return true;
  const slash = signerName.indexOf('/');
  return slash > 0 && authorize({ ...base, name: `${signerName.slice(0, slash)}/*` }).allowed;
}

export class CertificateApproval extends AdmissionPlugin {
  readonly name = 'CertificateApproval';
  constructor(objects: ObjectSource, private authorize: Authorize) {
    super(objects);
  }
  handles(a: Attributes): boolean {
    return a.subresource === 'approval' && isCsr(a) && a.user !== undefined;
  }
  override validate(a: Attributes): void {
    const signer = a.obj?.spec?.signerName ?? '';
    if (!authorizedForSigner(this.authorize, a.user!, 'approve', signer)) throw forbidden(a, `user not permitted to approve requests with signerName "${signer}"`);
  }
}

export class CertificateSigning extends AdmissionPlugin {
  readonly name = 'CertificateSigning';
  constructor(objects: ObjectSource, private authorize: Authorize) {
    super(objects);
  }
  handles(a: Attributes): boolean {
    return a.subresource === 'status' && isCsr(a) && a.user !== undefined;
  }
  override validate(a: Attributes): void {
    const now = bytesField(a.obj?.status?.certificate) ?? Buffer.alloc(0);
    const before = bytesField(a.old?.status?.certificate) ?? Buffer.alloc(0);
    if (now.equals(before)) return;
    const signer = a.obj?.spec?.signerName ?? '';
    if (!authorizedForSigner(this.authorize, a.user!, 'sign', signer)) throw forbidden(a, `user not permitted to sign requests with signerName "${signer}"`);
  }
}

export class CertificateSubjectRestriction extends AdmissionPlugin {
  readonly name = 'CertificateSubjectRestriction';
  handles(a: Attributes): boolean {
    return a.operation === 'CREATE' && a.subresource === '' && isCsr(a);
  }
  override validate(a: Attributes): void {
    if (a.obj?.spec?.signerName !== KUBE_APISERVER_CLIENT) return;
    let orgs: string[];
    try {
      orgs = parseCsrPem(bytesField(a.obj.spec.request)?.toString('latin1') ?? '').organizations;
    } catch (e) {
      throw forbidden(a, `failed to parse CSR: ${(e as Error).message}`);
    }
    if (orgs.includes('system:masters')) throw forbidden(a, `use of ${KUBE_APISERVER_CLIENT} signer with system:masters group is not allowed`);
  }
}
