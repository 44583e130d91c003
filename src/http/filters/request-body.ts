// The request body is read here, after every filter that may refuse a request from its
// headers (authentication, audit, impersonation, flow control, authorization) and before
// the router: as kube-apiserver's handlers read the body only once its filters have let the
// request through, a refused upload is answered at once and its body never buffered (the
// transport then closes the connection, so the unread rest is never parsed as a request).
// A request without a body, or whose body is in already, goes on synchronously.
import type { Filter } from '../filter-chain.js';

export const requestBodyFilter: Filter = {
  name: 'request-body',
  run: (req) => req.readBody(),
};
