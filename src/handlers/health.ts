// /healthz, /livez, /readyz: 200 "ok" once the server serves; /readyz fails while shutting
// down. Verbose output and per-check paths come with their own issue.
import type { ApiRequest, ResponseSink } from '../http/types.js';
import { sendText } from '../http/respond.js';

export interface HealthState {
  ready: boolean;
  shuttingDown: boolean;
}

const ENDPOINTS = new Set(['/healthz', '/livez', '/readyz']);

export function healthHandler(state: HealthState): (req: ApiRequest, res: ResponseSink) => boolean {
  return (req, res) => {
    const path = req.path.replace(/\/+$/, '');
    const base = '/' + (path.split('/')[1] ?? '');
    if (!ENDPOINTS.has(base)) return false;
    const ok = state.ready && !(base === '/readyz' && state.shuttingDown);
    if (ok) sendText(res, 200, 'ok');
    else sendText(res, 500, `[-]${base === '/readyz' ? 'shutdown' : 'ping'} failed: reason withheld\n${base.slice(1)} check failed\n`);
    return true;
  };
}
