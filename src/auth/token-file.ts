// Static token file (--token-auth-file): CSV of token,user,uid[,"group1,group2"].
import { readFileSync } from 'node:fs';
import type { UserInfo } from './user.js';

function parseCsvLine(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cur += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out.map((s) => s.trim());
}

export function parseTokenFile(text: string, source = 'token file'): Map<string, UserInfo> {
  const tokens = new Map<string, UserInfo>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const cols = parseCsvLine(line);
    if (cols.length < 3) throw new Error(`${source}: line ${i + 1}: needs at least 3 columns (token,user,uid), got ${cols.length}`);
    const [token, name, uid, groups] = cols;
    if (token === '') throw new Error(`${source}: line ${i + 1}: empty token`);
    tokens.set(token, { name, uid, groups: groups ? groups.split(',').map((g) => g.trim()).filter(Boolean) : [] });
  });
  return tokens;
}

export function loadTokenFile(path: string): Map<string, UserInfo> {
  return parseTokenFile(readFileSync(path, 'utf8'), path);
}
