// The storage conformance suite on the in-memory reference backend: the generic start-up
// (load) and feed, with no LMDB capability behind them.
import { storageConformance } from './conformance.js';
import { MemoryStorage, memoryData } from './memory-storage.js';

storageConformance('memory', async () => {
  const data = memoryData();
  const storage = new MemoryStorage(data);
  return {
    storage,
    compact: async () => storage.compact(),
    // a restart: a new instance over the same data
    reopen: () => new MemoryStorage(data),
  };
});
