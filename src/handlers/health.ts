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
    // Trailing slashes off by a loop: /\/+$/ is quadratic in a path of many slashes.
    let end = req.path.length;
    while (end > 0 && req.path.charCodeAt(end - 1) === 47) end--;
    const path = req.path.slice(0, end);
    const base = '/' + (path.split('/')[1] ?? '');
    if (!ENDPOINTS.has(base)) return false;
    const ok = state.ready && !(base === '/readyz' && state.shuttingDown);
    if (ok) sendText(res, 200, 'ok');
    else sendText(res, 500, `[-]${base === '/readyz' ? 'shutdown' : 'ping'} failed: reason withheld\n${base.slice(1)} check failed\n`);
    return true;
  };
}
