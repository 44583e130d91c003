// The generated admin identity: a static token of a system:masters user in
// <data-dir>/admin-token.csv, and a kubeconfig that uses it.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseTokenFile } from './token-file.js';
import { writePrivateFile } from '../file-modes.js';
import type { UserInfo } from './user.js';

export function ensureAdminToken(dataDir: string): { token: string; file: string; tokens: Map<string, UserInfo> } {
  const file = join(dataDir, 'admin-token.csv');
  if (!existsSync(file)) {
    const token = randomBytes(24).toString('base64url');
    writePrivateFile(file, `${token},admin,kubeshard-admin,"system:masters"\n`);
  }
  const tokens = parseTokenFile(readFileSync(file, 'utf8'), file);
  const [token] = [...tokens.keys()];
  return { token, file, tokens };
}

export function writeKubeconfig(path: string, server: string, caPem: string, token: string): void {
  const ca = Buffer.from(caPem).toString('base64');
  const yaml = `apiVersion: v1
kind: Config
clusters:
- name: kubeshard
  cluster:
    server: ${server}
    certificate-authority-data: ${ca}
users:
- name: admin
  user:
    token: ${token}
contexts:
- name: kubeshard
  context:
    cluster: kubeshard
    user: admin
    namespace: default
current-context: kubeshard
preferences: {}
`;
  // rewritten at every start: 0600 even over a file an earlier version left 0644
  writePrivateFile(path, yaml);
}
