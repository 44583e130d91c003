// One probe or hook action (kubelet's prober): exec (exit 0), httpGet (a status 200-399),
// tcpSocket (a connection), within timeoutSeconds. The pod's network is the host's here,
// so a probe without a host goes to 127.0.0.1. gRPC probes are not run (counted as passing).
//
// Thread ownership: stateless; the agent's main thread.
import { spawn } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import { connect } from 'node:net';

/** Where a probe runs: the container's directory, environment and named ports. */
export interface ProbeTarget {
  dir: string;
  env: Record<string, string>;
  ports: Array<{ name?: string; containerPort: number }>;
}

/** One probe (kubelet's prober): exec exit 0, an HTTP status 200-399, or a TCP connect, within timeoutSeconds. */
export function runProbe(p: any, c: ProbeTarget): Promise<boolean> {
  const timeout = (p.timeoutSeconds ?? 1) * 1000;
  const port = (v: any): number => (typeof v === 'number' ? v : Number(v) || c.ports.find((x) => x.name === v)?.containerPort || 0);
  if (p.exec) {
    return new Promise((res) => {
      const cmd: string[] = p.exec.command ?? [];
      if (!cmd.length) return res(false);
      const child = spawn(cmd[0], cmd.slice(1), { cwd: c.dir, env: c.env, stdio: 'ignore', timeout });
      child.on('error', () => res(false));
      child.on('close', (code) => res(code === 0));
    });
  }
  if (p.httpGet) {
    return new Promise((res) => {
      const mod = (p.httpGet.scheme ?? 'HTTP').toUpperCase() === 'HTTPS' ? https : http;
      const headers: Record<string, string> = { 'user-agent': 'kube-probe/1.33' };
      for (const h of p.httpGet.httpHeaders ?? []) headers[h.name] = h.value;
      const req = mod.request({ host: p.httpGet.host || '127.0.0.1', port: port(p.httpGet.port), path: p.httpGet.path ?? '/', method: 'GET', headers, timeout, rejectUnauthorized: false }, (r) => {
        r.resume();
        res((r.statusCode ?? 0) >= 200 && (r.statusCode ?? 0) < 400);
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => res(false));
      req.end();
    });
  }
  if (p.tcpSocket) {
    return new Promise((res) => {
      const s = connect({ host: p.tcpSocket.host || '127.0.0.1', port: port(p.tcpSocket.port) });
      s.setTimeout(timeout, () => (s.destroy(), res(false)));
      s.on('connect', () => (s.destroy(), res(true)));
      s.on('error', () => res(false));
    });
  }
  return Promise.resolve(true); // grpc probes: not supported, counted as passing
}
