import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tightenOwnDir, writePrivateFile } from './file-modes.js';

let root: string;
const mode = (p: string) => lstatSync(p).mode & 0o7777;
const make = (p: string, m: number, dir = false) => {
  if (dir) mkdirSync(p);
  else writeFileSync(p, 'x');
  chmodSync(p, m);
};
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'kubeshard-modes-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('tightenOwnDir', () => {
  it("closes the server's own entries, recursively, and the directory itself; leaves the rest", () => {
    const dir = join(root, 'data');
    make(dir, 0o755, true);
    make(join(dir, 'shard-0'), 0o755, true);
    make(join(dir, 'shard-0', 'data.mdb'), 0o644);
    make(join(dir, 'sa.key'), 0o640);
    make(join(dir, 'other.txt'), 0o644);
    make(join(root, 'outside'), 0o644);
    symlinkSync(join(root, 'outside'), join(dir, 'admin.kubeconfig'));
    const warnings: string[] = [];
    tightenOwnDir(dir, (n) => n === 'sa.key' || n === 'admin.kubeconfig' || /^shard-\d+$/.test(n), (m) => warnings.push(m));
    expect([mode(dir), mode(join(dir, 'shard-0')), mode(join(dir, 'shard-0', 'data.mdb')), mode(join(dir, 'sa.key'))]).toEqual([0o700, 0o700, 0o600, 0o600]);
    expect(mode(join(dir, 'other.txt'))).toBe(0o644);
    // a symbolic link is not followed: what it points at is not ours
    expect(mode(join(root, 'outside'))).toBe(0o644);
    expect(warnings).toEqual([]);
  });

  it('an empty directory is ours; one holding only other files, or a shared (sticky) one, is only warned about', () => {
    make(join(root, 'empty'), 0o755, true);
    make(join(root, 'home'), 0o755, true);
    make(join(root, 'home', 'photo.jpg'), 0o644);
    make(join(root, 'shared'), 0o1777, true);
    const warnings: string[] = [];
    for (const d of ['empty', 'home', 'shared']) tightenOwnDir(join(root, d), (n) => n === 'sa.key', (m) => warnings.push(m));
    expect([mode(join(root, 'empty')), mode(join(root, 'home')), mode(join(root, 'shared'))]).toEqual([0o700, 0o755, 0o1777]);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/home \(mode 755\) holds files that are not the server's/);
    expect(warnings[1]).toMatch(/shared is a shared directory \(sticky bit\)/);
  });
});

describe('writePrivateFile', () => {
  it('leaves a rewritten file 0600 even when the old one was 0644', () => {
    const f = join(root, 'admin.kubeconfig');
    make(f, 0o644);
    writePrivateFile(f, 'new');
    expect(mode(f)).toBe(0o600);
  });
});
