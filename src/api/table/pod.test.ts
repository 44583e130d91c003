import { describe, it, expect } from 'vitest';
import { podPrinter, podRow } from './pod.js';

const NOW = Date.parse('2025-03-01T12:00:00Z');
const meta = (extra: object = {}) => ({ name: 'web-0', namespace: 'default', creationTimestamp: '2025-03-01T11:55:00Z', ...extra });
const running = (name: string, ready: boolean, restartCount = 0, lastFinished?: string) => ({
  name,
  ready,
  restartCount,
  started: true,
  image: 'nginx',
  imageID: '',
  state: { running: { startedAt: '2025-03-01T11:56:00Z' } },
  lastState: lastFinished ? { terminated: { exitCode: 1, reason: 'Error', finishedAt: lastFinished } } : {},
});

describe('pod table rows', () => {
  it('has kube-apiserver\'s columns, the last four wide', () => {
    expect(podPrinter.columns.map((c) => [c.name, c.type, c.priority])).toEqual([
      ['Name', 'string', 0], ['Ready', 'string', 0], ['Status', 'string', 0], ['Restarts', 'string', 0], ['Age', 'string', 0],
      ['IP', 'string', 1], ['Node', 'string', 1], ['Nominated Node', 'string', 1], ['Readiness Gates', 'string', 1],
    ]);
    expect(podPrinter.columns[0].format).toBe('name');
  });

  it('a freshly created pod: Pending, nothing ready, <none> in the wide columns', () => {
    const pod = { metadata: meta(), spec: { containers: [{ name: 'a', image: 'nginx' }, { name: 'b', image: 'redis' }] }, status: { phase: 'Pending', qosClass: 'BestEffort' } };
    expect(podRow(pod, NOW).cells).toEqual(['web-0', '0/2', 'Pending', '0', '5m', '<none>', '<none>', '<none>', '<none>']);
  });

  it('a running pod with one ready container of two and restarts "(5m ago)"', () => {
    const pod = {
      metadata: meta(),
      spec: { nodeName: 'node-1', containers: [{ name: 'a' }, { name: 'b' }], readinessGates: [{ conditionType: 'example.com/lb' }] },
      status: {
        phase: 'Running',
        podIP: '10.1.2.3',
        podIPs: [{ ip: '10.1.2.3' }, { ip: 'fd00::3' }],
        conditions: [{ type: 'Ready', status: 'False' }, { type: 'example.com/lb', status: 'True' }],
        containerStatuses: [running('a', true, 2, '2025-03-01T11:55:00Z'), running('b', false, 1, '2025-03-01T11:50:00Z')],
      },
    };
    expect(podRow(pod, NOW).cells).toEqual(['web-0', '1/2', 'Running', '3 (5m ago)', '5m', '10.1.2.3', 'node-1', '<none>', '1/1']);
  });

  it('waiting and terminated container reasons become the status', () => {
    const waiting = {
      metadata: meta(),
      spec: { containers: [{ name: 'a' }] },
      status: { phase: 'Pending', containerStatuses: [{ name: 'a', ready: false, restartCount: 0, state: { waiting: { reason: 'ImagePullBackOff' } } }] },
    };
    expect(podRow(waiting, NOW).cells[2]).toBe('ImagePullBackOff');
    const crash = {
      metadata: meta(),
      spec: { containers: [{ name: 'a' }] },
      status: { phase: 'Running', containerStatuses: [{ name: 'a', ready: false, restartCount: 7, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 1, finishedAt: '2025-03-01T10:00:00Z' } } }] },
    };
    expect(podRow(crash, NOW).cells.slice(1, 4)).toEqual(['0/1', 'CrashLoopBackOff', '7 (120m ago)']);
    const signal = {
      metadata: meta(),
      spec: { containers: [{ name: 'a' }] },
      status: { phase: 'Failed', containerStatuses: [{ name: 'a', ready: false, restartCount: 0, state: { terminated: { exitCode: 137, signal: 9 } } }] },
    };
    const r = podRow(signal, NOW);
    expect(r.cells[2]).toBe('Signal:9');
    expect(r.conditions).toEqual([expect.objectContaining({ type: 'Completed', status: 'True', reason: 'Failed' })]);
  });

  it('a completed pod is Completed, with the Completed row condition', () => {
    const pod = {
      metadata: meta(),
      spec: { containers: [{ name: 'a' }] },
      status: { phase: 'Succeeded', containerStatuses: [{ name: 'a', ready: false, restartCount: 0, state: { terminated: { exitCode: 0, reason: 'Completed' } } }] },
    };
    const r = podRow(pod, NOW);
    expect(r.cells.slice(1, 3)).toEqual(['0/1', 'Completed']);
    expect(r.conditions?.[0]).toMatchObject({ type: 'Completed', status: 'True', reason: 'Succeeded' });
  });

  it('init containers: Init:N/M, Init:<reason>, and sidecars counted as containers', () => {
    const base = { metadata: meta(), spec: { initContainers: [{ name: 'i1' }, { name: 'i2' }], containers: [{ name: 'a' }] } };
    const second = { ...base, status: { phase: 'Pending', initContainerStatuses: [{ name: 'i1', restartCount: 0, state: { terminated: { exitCode: 0 } } }, { name: 'i2', restartCount: 0, state: { running: {} } }] } };
    expect(podRow(second, NOW).cells.slice(1, 3)).toEqual(['0/1', 'Init:1/2']);
    const failing = { ...base, status: { phase: 'Pending', initContainerStatuses: [{ name: 'i1', restartCount: 3, state: { waiting: { reason: 'CrashLoopBackOff' } } }] } };
    expect(podRow(failing, NOW).cells.slice(1, 4)).toEqual(['0/1', 'Init:CrashLoopBackOff', '3']);
    const exit = { ...base, status: { phase: 'Pending', initContainerStatuses: [{ name: 'i1', restartCount: 0, state: { terminated: { exitCode: 2 } } }] } };
    expect(podRow(exit, NOW).cells[2]).toBe('Init:ExitCode:2');

    const sidecar = {
      metadata: meta(),
      spec: { initContainers: [{ name: 'proxy', restartPolicy: 'Always' }], containers: [{ name: 'a' }] },
      status: {
        phase: 'Running',
        conditions: [{ type: 'Initialized', status: 'True' }, { type: 'Ready', status: 'True' }],
        initContainerStatuses: [{ name: 'proxy', ready: true, started: true, restartCount: 1, state: { running: {} }, lastState: { terminated: { exitCode: 1, finishedAt: '2025-03-01T11:58:00Z' } } }],
        containerStatuses: [running('a', true)],
      },
    };
    expect(podRow(sidecar, NOW).cells.slice(1, 4)).toEqual(['2/2', 'Running', '1 (2m ago)']);
  });

  it('deletion: Terminating, or Unknown on a lost node; scheduling gates', () => {
    const del = { metadata: meta({ deletionTimestamp: '2025-03-01T11:59:00Z' }), spec: { containers: [{ name: 'a' }] }, status: { phase: 'Running' } };
    expect(podRow(del, NOW).cells[2]).toBe('Terminating');
    const lost = { ...del, status: { phase: 'Running', reason: 'NodeLost' } };
    expect(podRow(lost, NOW).cells[2]).toBe('Unknown');
    const done = { ...del, status: { phase: 'Succeeded' } };
    expect(podRow(done, NOW).cells[2]).toBe('Succeeded');
    const gated = { metadata: meta(), spec: { containers: [{ name: 'a' }] }, status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated' }] } };
    expect(podRow(gated, NOW).cells[2]).toBe('SchedulingGated');
  });

  it('Completed with a container still running reads Running (or NotReady)', () => {
    const pod = {
      metadata: meta(),
      spec: { containers: [{ name: 'a' }, { name: 'b' }] },
      status: {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'False' }],
        containerStatuses: [{ name: 'a', ready: false, restartCount: 0, state: { terminated: { exitCode: 0, reason: 'Completed' } } }, running('b', true)],
      },
    };
    expect(podRow(pod, NOW).cells.slice(1, 3)).toEqual(['1/2', 'NotReady']);
  });
});
