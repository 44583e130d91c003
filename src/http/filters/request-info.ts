import type { Filter } from '../filter-chain.js';
import { parseRequestInfo } from '../../request/request-info.js';

/** Read-only stand-in for an empty query string, so that most requests never build one. */
const NO_QUERY = new URLSearchParams();

export const requestInfoFilter: Filter = {
  name: 'request-info',
  run(req) {
    req.requestInfo = parseRequestInfo(req.method, req.path, req.rawQuery === '' ? NO_QUERY : req.query);
  },
};
