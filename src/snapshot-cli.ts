// `kubeshard snapshot save | restore | status`: backup and restore of the LMDB backend, in
// the shape of etcdctl snapshot save and etcdutl snapshot restore / status (the storage
// itself is src/storage/lmdb/snapshot.ts).
//
// Thread ownership: the CLI process's one thread.
import { restrictUmask } from './file-modes.js';
import { FlagError } from './options.js';
import { restoreSnapshot, saveSnapshot, snapshotStatus, type RestoreFlags } from './storage/lmdb/snapshot.js';

export const SNAPSHOT_USAGE = `Usage:
  kubeshard snapshot save FILE [--data-dir DIR]
      Writes a consistent snapshot of the data dir's storage to FILE (0600): taken by the
      server running on DIR while it serves, or read from DIR while no server runs on it.
  kubeshard snapshot restore FILE [--data-dir DIR] [--shards N] [--shard-map MAP]
                                  [--bump-revision N --mark-compacted]
      Builds a new data dir DIR (missing or empty) from FILE: every object with its
      resourceVersion, the retained history and the compacted revision. --shards and
      --shard-map, when given, must be the snapshot's. As etcdutl's: --bump-revision N
      goes on N versions above the snapshot's, and --mark-compacted ends the history
      there (older watches get 410 Expired and their clients list afresh).
  kubeshard snapshot status FILE [--write-out table|json]
      Checks FILE whole (its SHA-256) and prints its version, shards, objects and size.

--data-dir defaults to ./data, as the server's.`;

interface Parsed {
  verb: string;
  file: string;
  flags: Record<string, string>;
}

const FLAGS: Record<string, string[]> = {
  save: ['data-dir'],
  restore: ['data-dir', 'shards', 'shard-map', 'bump-revision', 'mark-compacted'],
  status: ['write-out', 'w'],
};

const BOOL_FLAGS = new Set(['mark-compacted']);

function parse(argv: string[]): Parsed | 'help' {
  const [verb, ...rest] = argv;
  if (!verb || verb === '-h' || verb === '--help' || verb === 'help') return 'help';
  if (!FLAGS[verb]) throw new FlagError(`unknown snapshot command "${verb}": want save, restore or status`);
  const flags: Record<string, string> = {};
  const files: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '-h' || a === '--help') return 'help';
    if (!a.startsWith('-')) {
      files.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = a.replace(/^--?/, '').slice(0, eq < 0 ? undefined : eq - (a.startsWith('--') ? 2 : 1));
    if (!FLAGS[verb].includes(name)) throw new FlagError(`unknown flag for snapshot ${verb}: ${a.slice(0, eq < 0 ? undefined : eq)}`);
    if (eq >= 0) flags[name] = a.slice(eq + 1);
    else if (BOOL_FLAGS.has(name)) flags[name] = 'true';
    else if (i + 1 < rest.length) flags[name] = rest[++i];
    else throw new FlagError(`flag needs an argument: ${a}`);
  }
  if (files.length !== 1) throw new FlagError(`snapshot ${verb} takes one FILE, got ${files.length}`);
  return { verb, file: files[0], flags };
}

function shardMapFlag(v: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of v.split(',').filter(Boolean)) {
    const [k, n] = part.split('=');
    if (!k || n === undefined || !/^\d+$/.test(n)) throw new FlagError(`invalid --shard-map entry "${part}": want group-resource=index`);
    out[k] = Number(n);
  }
  return out;
}

const size = (b: number) => (b < 1024 ? `${b} B` : b < 1 << 20 ? `${(b / 1024).toFixed(1)} kB` : b < 1 << 30 ? `${(b / (1 << 20)).toFixed(1)} MB` : `${(b / (1 << 30)).toFixed(2)} GB`);

function table(head: string[], row: string[]): string {
  const w = head.map((h, i) => Math.max(h.length, row[i].length) + 2);
  const line = '+' + w.map((n) => '-'.repeat(n)).join('+') + '+';
  const cells = (c: string[]) => '|' + c.map((s, i) => ` ${s}`.padEnd(w[i])).join('|') + '|';
  return [line, cells(head), line, cells(row), line].join('\n');
}

/** Runs one snapshot command; resolves with the process's exit code. */
export async function snapshotMain(argv: string[]): Promise<number> {
  let p: Parsed | 'help';
  try {
    p = parse(argv);
  } catch (e) {
    if (!(e instanceof FlagError)) throw e;
    console.error(`Error: ${e.message}`);
    console.error(SNAPSHOT_USAGE);
    return 2;
  }
  if (p === 'help') {
    console.log(SNAPSHOT_USAGE);
    return 0;
  }
  // what this command writes (the file, a restored data dir) is for the server's user alone
  restrictUmask();
  const dataDir = p.flags['data-dir'] ?? './data';
  try {
    switch (p.verb) {
      case 'save': {
        const { summary, via } = await saveSnapshot(dataDir, p.file);
        const records = summary.records.reduce((a, b) => a + b, 0);
        console.log(`Snapshot saved at ${p.file} (resourceVersion ${summary.header.resourceVersion}, ${summary.header.shardCount} shards, ${records} records, ${size(summary.bytes)}, ${via === 'server' ? 'taken by the running server' : 'read from the data dir'})`);
        return 0;
      }
      case 'restore': {
        const flags: RestoreFlags = {};
        if (p.flags.shards !== undefined) {
          if (!/^\d+$/.test(p.flags.shards)) throw new FlagError(`invalid argument "${p.flags.shards}" for "--shards" flag`);
          flags.shards = Number(p.flags.shards);
        }
        if (p.flags['shard-map'] !== undefined) flags.shardMap = shardMapFlag(p.flags['shard-map']);
        if (p.flags['bump-revision'] !== undefined) {
          if (!/^\d+$/.test(p.flags['bump-revision'])) throw new FlagError(`invalid argument "${p.flags['bump-revision']}" for "--bump-revision" flag`);
          flags.bumpRevision = Number(p.flags['bump-revision']);
        }
        if (p.flags['mark-compacted'] !== undefined) {
          if (!/^(true|false)$/.test(p.flags['mark-compacted'])) throw new FlagError(`invalid argument "${p.flags['mark-compacted']}" for "--mark-compacted" flag`);
          flags.markCompacted = p.flags['mark-compacted'] === 'true';
        }
        const summary = await restoreSnapshot(p.file, dataDir, flags);
        const bumped = flags.bumpRevision ? `; versions go on above ${summary.header.resourceVersion + flags.bumpRevision}, history compacted there` : '';
        console.log(`Restored ${p.file} into ${dataDir} (resourceVersion ${summary.header.resourceVersion}, ${summary.header.shardCount} shards, ${summary.records.reduce((a, b) => a + b, 0)} records${bumped})`);
        return 0;
      }
      default: {
        const s = snapshotStatus(p.file);
        const out = p.flags['write-out'] ?? p.flags.w ?? 'table';
        const fields = { hash: s.sha256, revision: s.header.resourceVersion, totalKey: s.objects, totalRecords: s.records.reduce((a, b) => a + b, 0), totalSize: s.bytes, shards: s.header.shardCount, shardMap: s.header.shardMap, compactedRevisions: s.header.shards.map((x) => x.compactedRv), created: s.header.created, source: s.header.source, version: s.header.format };
        if (out === 'json') console.log(JSON.stringify(fields));
        else if (out === 'table') console.log(table(['HASH', 'REVISION', 'TOTAL KEYS', 'TOTAL RECORDS', 'TOTAL SIZE', 'SHARDS', 'VERSION'], [s.sha256.slice(0, 16), String(fields.revision), String(fields.totalKey), String(fields.totalRecords), size(s.bytes), String(fields.shards), String(fields.version)]));
        else throw new FlagError(`--write-out: want table or json, got ${JSON.stringify(out)}`);
        return 0;
      }
    }
  } catch (e) {
    console.error(`Error: ${e instanceof Error ? e.message : String(e)}`);
    return e instanceof FlagError ? 2 : 1;
  }
}
