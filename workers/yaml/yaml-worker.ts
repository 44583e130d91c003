// The YAML decoding worker (src/codec/yaml-offload.ts): parses one large request body at
// a time with the front thread's own parseYaml11, and sends back the value (aliases stay
// shared references: structured cloning keeps them) and its duplicate-key messages, or
// the error message the front thread would have had.
// Thread ownership: this worker thread only.
import { parentPort } from 'node:worker_threads';
import { parseYaml11Here, yamlDuplicatesOf } from '../../src/codec/yaml.js';

parentPort!.on('message', ({ id, text }: { id: number; text: string }) => {
  try {
    const value = parseYaml11Here(text);
    parentPort!.postMessage({ id, value, dups: yamlDuplicatesOf(value) ?? [] });
  } catch (e) {
    parentPort!.postMessage({ id, error: e instanceof Error ? e.message : String(e) });
  }
});
