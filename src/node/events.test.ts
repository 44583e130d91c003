import { describe, expect, it } from 'vitest';
import { ApiError, type ApiClient } from './api-client.js';
import { EventRecorder } from './events.js';

// The recorder's policy alone: the API client is a stand-in that fails as told.
function client(failures: unknown[]) {
  const calls: string[] = [];
  const api = {
    post: async (path: string) => {
      calls.push(`POST ${path}`);
      const f = failures.shift();
      if (f) throw f;
      return {};
    },
    patch: async (path: string) => {
      calls.push(`PATCH ${path}`);
      const f = failures.shift();
      if (f) throw f;
      return {};
    },
  } as unknown as ApiClient;
  return { api, calls };
}
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('EventRecorder', () => {
  it("tries a write again after a 429, a 5xx or no answer, and counts a lost answer's AlreadyExists as done", async () => {
    const { api, calls } = client([new ApiError(429, { reason: 'TooManyRequests' }), new Error('socket hang up'), new ApiError(409, { reason: 'AlreadyExists' })]);
    const logged: string[] = [];
    new EventRecorder(api, 'n1', (m) => logged.push(m)).record({ kind: 'Pod', namespace: 'default', name: 'p' }, 'Normal', 'Started', 'Started container c');
    await wait(2000);
    expect(calls).toEqual(['POST /api/v1/namespaces/default/events', 'POST /api/v1/namespaces/default/events', 'POST /api/v1/namespaces/default/events']);
    expect(logged).toEqual([]);
  });
  it('does not try again a write the server refused for what it is', async () => {
    const { api, calls } = client([new ApiError(422, { reason: 'Invalid', message: 'bad' })]);
    const logged: string[] = [];
    new EventRecorder(api, 'n1', (m) => logged.push(m)).record({ kind: 'Pod', namespace: 'default', name: 'p' }, 'Normal', 'Started', 'x');
    await wait(700);
    expect(calls.length).toBe(1);
    expect(logged[0]).toMatch(/event Started on Pod p: 422/);
  });
});
