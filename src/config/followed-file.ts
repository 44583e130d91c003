// A configuration file the server follows while it runs (--authentication-config,
// --authorization-config, the client CA bundles): read the same by every front thread.
//
// If each thread polled the file on its own, two threads could end up on different
// configurations for good: a valid version that is replaced by an invalid one before a
// thread's next poll is never seen by that thread, which then keeps its older configuration
// while the others run the newer one. So only the main thread polls (fs.watchFile, by the
// file's status); each new content it reads goes to its own handler and, over a
// BroadcastChannel named for the file, to the same handler on every other front thread,
// which decides on the same text as the main thread did.
//
// Thread ownership: each thread owns its follower; the main thread's alone reads the file.
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { BroadcastChannel, isMainThread } from 'node:worker_threads';

export interface FollowedFile {
  stop(): void;
}

/**
 * Calls `onText` with each new content of the file: on the main thread when its poll (every
 * `intervalMs`) reads a changed file, and on the other front threads when the main thread
 * passes that content on. `onError` hears of a file the main thread could not read.
 */
export function followFile(path: string, intervalMs: number, onText: (text: string) => void, onError: (e: Error) => void): FollowedFile {
  const channel = new BroadcastChannel(`kubeshard:file:${path}`);
  // (a follower never keeps the process alive)
  (channel as unknown as { unref(): void }).unref();
  if (!isMainThread) {
    channel.onmessage = (e) => onText((e as { data: string }).data);
    return { stop: () => channel.close() };
  }
  let last: string | undefined;
  const listener = () => {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (e) {
      onError(e as Error);
      return;
    }
    if (text === last) return;
    last = text;
    channel.postMessage(text);
    onText(text);
  };
  watchFile(path, { interval: intervalMs, persistent: false }, listener);
  return {
    stop: () => {
      unwatchFile(path, listener);
      channel.close();
    },
  };
}
