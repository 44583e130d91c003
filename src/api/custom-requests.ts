// What the custom-resource handler of kube (apiextensions-apiserver's crdHandler) refuses
// before a request reaches the generic handlers:
//  - custom objects have no protobuf form: an Accept that asks only for protobuf objects is
//    406, a protobuf clause among others is passed over (meta conversions such as
//    as=PartialObjectMetadata keep theirs); a protobuf body is 415;
//  - a CRD being deleted serves its instances for reads and deletes, but refuses creates.
import type { ApiRequest } from '../http/types.js';
import type { RequestInfo } from '../request/request-info.js';
import { errors, StatusError, StatusReason } from '../errors.js';
import { PROTOBUF_MEDIA_TYPE } from '../codec/negotiate.js';
import type { CustomVersion } from './custom-resources.js';

const CUSTOM_TYPES = ['application/json', 'application/yaml'];

export function checkCustomRequest(req: ApiRequest, info: RequestInfo, cv: CustomVersion): void {
  if (cv.terminating && info.verb === 'create' && !info.subresource) {
    throw new StatusError(405, StatusReason.MethodNotAllowed, 'create not allowed while custom resource definition is terminating', { group: cv.group, kind: cv.plural });
  }
  const accept = req.headers['accept'];
  if (accept && accept.toLowerCase().includes(PROTOBUF_MEDIA_TYPE)) {
    const kept = accept.split(',').filter((c) => !(c.split(';')[0].trim().toLowerCase() === PROTOBUF_MEDIA_TYPE && !/;\s*as=/i.test(c)));
    if (kept.length === 0) throw errors.notAcceptable(CUSTOM_TYPES);
    req.headers['accept'] = kept.join(',');
  }
  const ct = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (ct === PROTOBUF_MEDIA_TYPE && (info.verb === 'create' || info.verb === 'update')) throw errors.unsupportedMediaType(CUSTOM_TYPES);
}
