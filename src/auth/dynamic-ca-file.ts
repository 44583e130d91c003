// A CA bundle read from a file and followed while the server runs (kube's
// dynamiccertificates.DynamicFileCAContent, behind --client-ca-file and
// --requestheader-client-ca-file): the file is checked every second (its modification time,
// as the other reloaded files here are), and a changed bundle replaces the old one for what
// comes next: the TLS handshakes of new connections, the authenticators' checks of each
// request, and the extension-apiserver-authentication ConfigMap. A file that is gone, empty
// or holds no readable certificate is refused with a line in the log, and the bundle in use
// stays (kube keeps its last good content too).
//
// Thread ownership: one per thread that reads it (each front thread makes its own; the main
// thread polls the file and hands every other thread the same content:
// config/followed-file.ts); its listeners run on that thread.
import { readFileSync } from 'node:fs';
import { followFile, type FollowedFile } from '../config/followed-file.js';
import { bundleFingerprints } from './authenticators/ca-bundle.js';

export class DynamicCaFile {
  /** the bundle's PEM text as the file holds it */
  pem: string;
  /** SHA-256 fingerprints of its certificates (ca-bundle.ts's form); replaced, never mutated */
  fingerprints: Set<string>;
  private listeners: Array<() => void> = [];
  private followed: FollowedFile | undefined;

  /** Reads the file now: a bundle the server cannot start with throws (kube refuses to start too). */
  constructor(
    readonly flag: string,
    readonly path: string,
    private readonly intervalMs = 1000,
  ) {
    let loaded: { pem: string; fingerprints: Set<string> };
    try {
      loaded = this.load();
    } catch (e) {
      // (as the flag's own check words it, options.ts)
      throw new Error(`${flag}: unable to load client CA file "${path}": ${(e as Error).message}`);
    }
    const { pem, fingerprints } = loaded;
    this.pem = pem;
    this.fingerprints = fingerprints;
  }

  private load(pem = readFileSync(this.path, 'utf8')): { pem: string; fingerprints: Set<string> } {
    if (pem.trim() === '') throw new Error(`not loading an empty CA bundle from "${this.path}"`);
    const fingerprints = bundleFingerprints(pem);
    if (fingerprints.size === 0) throw new Error(`no certificate found in "${this.path}"`);
    return { pem, fingerprints };
  }

  /** Called after each change of the bundle, on this thread. Starts following the file. */
  onChange(fn: () => void): void {
    this.listeners.push(fn);
    this.start();
  }

  /** Starts following the file (once; the timer never keeps the process alive). */
  start(): void {
    if (this.followed) return;
    this.followed = followFile(
      this.path,
      this.intervalMs,
      (text) => this.check(text),
      (e) => console.error(`E ${this.flag}: ${e.message}; keeping the CA bundle in use`),
    );
  }

  /**
   * Reads the file again (or takes `text`, its content as the main thread read it) and, when
   * its bundle changed, takes it and tells the listeners.
   */
  check(text?: string): boolean {
    let next: { pem: string; fingerprints: Set<string> };
    try {
      next = this.load(text);
    } catch (e) {
      console.error(`E ${this.flag}: ${(e as Error).message}; keeping the CA bundle in use`);
      return false;
    }
    if (next.pem === this.pem) return false;
    this.pem = next.pem;
    this.fingerprints = next.fingerprints;
    console.warn(`I ${this.flag}: loaded a new CA bundle from "${this.path}" (${next.fingerprints.size} certificates)`);
    for (const fn of this.listeners) {
      try {
        fn();
      } catch (e) {
        console.error(`E ${this.flag}: applying the new CA bundle: ${(e as Error).message}`);
      }
    }
    return true;
  }

  stop(): void {
    this.followed?.stop();
    this.followed = undefined;
  }
}

/** The bundles the TLS handshake trusts (kube's union of the client CAs), as one source that changes when any of them does. */
export interface ClientCaSource {
  pems(): string[];
  onChange(fn: () => void): void;
}

export function clientCaSource(files: DynamicCaFile[]): ClientCaSource | undefined {
  if (files.length === 0) return undefined;
  return {
    pems: () => files.map((f) => f.pem),
    onChange: (fn) => {
      for (const f of files) f.onChange(fn);
    },
  };
}
