// `kubectl port-forward` to a local TCP echo server standing for a port in the pod (the
// process runtime's and the test kubelet's pods share the host's network): two connections
// through the forward, each must echo what it sent. Returns kubectl's output.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { expect } from 'vitest';
import { until, type TestServer } from './server.js';
import { kubectlPath } from './kubectl.js';

export async function portForwardEcho(s: TestServer, pod: string, env: Record<string, string> = {}): Promise<string> {
  const echo = net.createServer((c) => c.pipe(c));
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  const target = (echo.address() as net.AddressInfo).port;
  // (PFV=1 prints kubectl's -v=8 trace of the upgrade)
  const pf = spawn(kubectlPath(), ['--kubeconfig', s.kubeconfigPath, 'port-forward', `pod/${pod}`, `:${target}`, ...(process.env.PFV ? ['-v=8'] : [])], { env: { ...process.env, ...env } });
  let out = '';
  pf.stdout.on('data', (d) => (out += d));
  pf.stderr.on('data', (d) => (out += d));
  try {
    const m = await until(() => /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out), 20_000).catch(() => {
      throw new Error(`kubectl port-forward: ${out}`);
    });
    for (const msg of ['first connection', 'second connection']) {
      const got = await new Promise<string>((res, rej) => {
        const c = net.connect(Number(m[1]), '127.0.0.1', () => c.write(msg));
        let b = '';
        c.on('data', (d) => {
          b += d;
          if (b.length >= msg.length) {
            c.end();
            res(b);
          }
        });
        c.on('error', rej);
      });
      expect(got).toBe(msg);
    }
  } finally {
    if (process.env.PFV) console.log(out.split('\n').filter((l) => !/Response Body|Request Body|round_trippers.go:632|discovery/.test(l)).join('\n'));
    pf.kill('SIGKILL');
    echo.close();
  }
  return out;
}
