// A checkpoint archive of a process-runtime container (kubelet's CheckpointContainer, the
// runtime's part): a tar of a state file (checkpoint.json: the pod, the container, its
// command, environment, pid and start), the container's log (container.log) and its
// directory (rootfs/), written to a file created 0600 and exclusive (never over another
// archive), removed again when anything fails or the timeout passes.
//
// Thread ownership: the agent's main thread.
import { chmodSync, createReadStream, createWriteStream, existsSync, lstatSync, openSync, readdirSync, readFileSync, unlinkSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { pack as tarPack } from 'tar-stream';

export interface CheckpointContent {
  state: unknown;
  logPath: string;
  dir: string;
}

/** Writes the archive; pause() before anything is read, resume() after (even on failure). */
export async function writeCheckpointArchive(archivePath: string, content: CheckpointContent, timeoutSeconds: number | undefined, pause: () => void, resume: () => void): Promise<void> {
  // created before anything is read, so that a name taken or a directory missing fails at once
  const fd = openSync(archivePath, 'wx', 0o600);
  const pk = tarPack();
  const file = createWriteStream('', { fd });
  const written = new Promise<void>((res, rej) => {
    file.on('finish', res);
    file.on('error', rej);
    pk.on('error', rej);
  });
  pk.pipe(file);
  let timer: NodeJS.Timeout | undefined;
  const work = (async () => {
    pause();
    try {
      await entry(pk, { name: 'checkpoint.json', mode: 0o600 }, Buffer.from(JSON.stringify(content.state, null, 2) + '\n'));
      if (existsSync(content.logPath)) await entry(pk, { name: 'container.log', mode: 0o600 }, readFileSync(content.logPath));
      await addTree(pk, content.dir, 'rootfs');
    } finally {
      resume();
    }
    pk.finalize();
    await written;
  })();
  try {
    if (timeoutSeconds && timeoutSeconds > 0) {
      await Promise.race([work, new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`checkpoint timed out after ${timeoutSeconds}s`)), timeoutSeconds * 1000)))]);
    } else await work;
    chmodSync(archivePath, 0o600);
  } catch (e) {
    pk.destroy();
    file.destroy();
    try {
      unlinkSync(archivePath);
    } catch {
      /* not written */
    }
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

function entry(pk: ReturnType<typeof tarPack>, header: { name: string; mode: number; type?: 'file' | 'directory'; mtime?: Date }, body?: Buffer): Promise<void> {
  return new Promise((res, rej) => {
    const w = pk.entry(header as any, body as any, (e?: Error | null) => (e ? rej(e) : res()));
    w.on('error', rej);
  });
}

/** Adds a directory's tree under prefix: directories and regular files (links and devices skipped). */
async function addTree(pk: ReturnType<typeof tarPack>, dir: string, prefix: string): Promise<void> {
  let st: Stats;
  try {
    st = lstatSync(dir);
  } catch {
    return;
  }
  await entry(pk, { name: prefix + '/', mode: st.mode & 0o7777, type: 'directory', mtime: st.mtime });
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    const s = lstatSync(p);
    if (s.isDirectory()) await addTree(pk, p, `${prefix}/${name}`);
    else if (s.isFile()) {
      await new Promise<void>((res, rej) => {
        const w = pk.entry({ name: `${prefix}/${name}`, size: s.size, mode: s.mode & 0o7777, mtime: s.mtime }, (e?: Error | null) => (e ? rej(e) : res()));
        w.on('error', rej);
        createReadStream(p).on('error', rej).pipe(w);
      });
    }
  }
}

