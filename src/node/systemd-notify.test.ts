// The notify protocol on a real unix datagram socket (a python3 receiver, since node
// cannot bind one): READY=1, the watchdog's pings at half of WATCHDOG_USEC, STOPPING=1;
// both helpers; an abstract socket name.
import { describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SystemdNotifier } from './systemd-notify.js';

const RECEIVER = `
import os, socket, sys
addr = sys.argv[1]
bind = "\\0" + addr[1:] if addr.startswith("@") else addr
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(bind)
print("bound", flush=True)
while True:
    print(s.recv(4096).decode().replace("\\n", "|"), flush=True)
`;

/** A datagram socket at addr collecting what it receives. */
async function receiver(addr: string): Promise<{ got: string[]; close: () => void }> {
  const p = spawn('python3', ['-c', RECEIVER, addr], { stdio: ['ignore', 'pipe', 'inherit'] });
  const got: string[] = [];
  let buf = '';
  await new Promise<void>((res) => {
    p.stdout.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line === 'bound') res();
        else got.push(line);
      }
    });
  });
  return { got, close: () => p.kill('SIGKILL') };
}

async function until(fn: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const hasSystemdNotify = spawnSync('systemd-notify', ['--help'], { stdio: 'ignore' }).status === 0;

describe('systemd notify', () => {
  it('sends READY=1, then WATCHDOG=1 pings at half of WATCHDOG_USEC, then STOPPING=1 (python3 helper)', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'ks-notify-')), 'notify.sock');
    const r = await receiver(path);
    try {
      const n = new SystemdNotifier({ env: { NOTIFY_SOCKET: path, WATCHDOG_USEC: '200000', WATCHDOG_PID: String(process.pid) }, helper: 'python3' });
      expect(n.watchdogIntervalMs()).toBe(200);
      n.ready();
      n.startWatchdog();
      await until(() => r.got.filter((m) => m === 'WATCHDOG=1').length >= 3);
      n.stop();
      await until(() => r.got.includes('STOPPING=1'));
      expect(r.got[0]).toBe('READY=1');
    } finally {
      r.close();
    }
  });

  it('no pings while unhealthy; none when WATCHDOG_PID names another process; nothing without NOTIFY_SOCKET', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'ks-notify-')), 'notify.sock');
    const r = await receiver(path);
    try {
      let healthy = false;
      const n = new SystemdNotifier({ env: { NOTIFY_SOCKET: path, WATCHDOG_USEC: '100000' }, helper: 'python3' });
      n.startWatchdog(() => healthy);
      n.notify('STATUS=waiting');
      await until(() => r.got.includes('STATUS=waiting'));
      expect(r.got).not.toContain('WATCHDOG=1');
      healthy = true;
      await until(() => r.got.includes('WATCHDOG=1'));
      n.stop();
      expect(new SystemdNotifier({ env: { NOTIFY_SOCKET: path, WATCHDOG_USEC: '100000', WATCHDOG_PID: '1' } }).watchdogIntervalMs()).toBeUndefined();
      const off = new SystemdNotifier({ env: {} });
      expect(off.enabled).toBe(false);
      off.ready(); // a no-op
    } finally {
      r.close();
    }
  });

  it('reaches an abstract socket ("@name")', async () => {
    const addr = `@ks-notify-test-${process.pid}-${Date.now()}`;
    const r = await receiver(addr);
    try {
      const n = new SystemdNotifier({ env: { NOTIFY_SOCKET: addr }, helper: 'python3' });
      n.ready();
      await until(() => r.got.includes('READY=1'));
      n.stop();
    } finally {
      r.close();
    }
  });

  it.skipIf(!hasSystemdNotify)('falls back to the systemd-notify command', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'ks-notify-')), 'notify.sock');
    const r = await receiver(path);
    try {
      const n = new SystemdNotifier({ env: { NOTIFY_SOCKET: path }, helper: 'systemd-notify' });
      n.notify('WATCHDOG=1');
      await until(() => r.got.some((m) => m.includes('WATCHDOG=1')));
    } finally {
      r.close();
    }
  });
});
