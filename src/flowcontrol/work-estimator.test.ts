import { describe, it, expect } from 'vitest';
import { estimateWork, type WorkSources } from './work-estimator.js';
import type { RequestInfo } from '../request/request-info.js';

const info = (verb: string, over: Partial<RequestInfo> = {}): RequestInfo =>
  ({ isResourceRequest: true, path: '/api/v1/pods', verb, apiPrefix: 'api', apiGroup: '', apiVersion: 'v1', namespace: 'ns', resource: 'pods', subresource: '', name: '', parts: [], legacyWatch: false, ...over }) as RequestInfo;

const sources = (objects: Record<string, number>, watchers = 0): WorkSources => ({ objectCount: (gr) => objects[gr], watchCount: () => watchers });
const seats = (verb: string, query: string, src: WorkSources, max = 10, over: Partial<RequestInfo> = {}) => estimateWork(info(verb, over), { query: new URLSearchParams(query) }, src, max);

describe('work estimation', () => {
  it("a list from the cache costs a seat per 100 of the resource's objects, between 1 and the level's maximum", () => {
    expect(seats('list', '', sources({ pods: 50 })).initialSeats).toBe(1);
    expect(seats('list', '', sources({ pods: 450 })).initialSeats).toBe(5);
    expect(seats('list', '', sources({ pods: 5000 })).initialSeats).toBe(10);
    expect(seats('list', '', sources({ pods: 5000 }), 3).initialSeats).toBe(3);
    // resourceVersion=0 and NotOlderThan read the cache whatever the limit: the whole count
    expect(seats('list', 'limit=10&resourceVersion=0', sources({ pods: 450 })).initialSeats).toBe(5);
    expect(seats('list', 'limit=10&resourceVersion=5&resourceVersionMatch=NotOlderThan', sources({ pods: 450 })).initialSeats).toBe(5);
  });

  it('a list from storage: 2 × limit, or count + limit with a selector; one object when named', () => {
    // an exact version with a limit, a continue token, or Exact: storage
    expect(seats('list', 'limit=100&resourceVersion=7', sources({ pods: 450 })).initialSeats).toBe(2);
    expect(seats('list', 'limit=100&resourceVersion=7&labelSelector=a%3Db', sources({ pods: 450 })).initialSeats).toBe(6);
    expect(seats('list', 'continue=abc&limit=250', sources({ pods: 450 })).initialSeats).toBe(5);
    expect(seats('list', 'resourceVersion=7&resourceVersionMatch=Exact', sources({ pods: 450 })).initialSeats).toBe(9);
    expect(seats('list', 'fieldSelector=metadata.name%3Dx', sources({ pods: 4500 }), 10, { name: 'x' }).initialSeats).toBe(1);
  });

  it('unknown resources cost one seat, options that do not parse the maximum', () => {
    expect(seats('list', '', sources({})).initialSeats).toBe(1);
    expect(seats('list', 'limit=abc', sources({ pods: 1 }), 4).initialSeats).toBe(4);
  });

  it('a watch costs one seat, or its initial list when it asked for initial events', () => {
    expect(seats('watch', '', sources({ pods: 4500 })).initialSeats).toBe(1);
    expect(seats('watch', 'sendInitialEvents=true&resourceVersionMatch=NotOlderThan', sources({ pods: 450 })).initialSeats).toBe(5);
  });

  it('a write with ten or more watchers holds ceil(watchers / 10) seats for 5 ms after its response', () => {
    expect(seats('create', '', sources({}, 9))).toEqual({ initialSeats: 1, finalSeats: 0, latencyMs: 0 });
    expect(seats('update', '', sources({}, 35))).toEqual({ initialSeats: 1, finalSeats: 4, latencyMs: 5 });
    expect(seats('delete', '', sources({}, 500)).finalSeats).toBe(10);
    expect(seats('get', '', sources({ pods: 5000 }, 500)).initialSeats).toBe(1);
  });
});
