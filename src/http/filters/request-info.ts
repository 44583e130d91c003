import type { Filter } from '../filter-chain.js';
import { parseRequestInfo } from '../../request/request-info.js';

export const requestInfoFilter: Filter = {
  name: 'request-info',
  run(req) {
    req.requestInfo = parseRequestInfo(req.method, req.path, req.query);
  },
};
