import { describe, expect, it } from 'vitest';
import { exitStatus, isStreamingPath, logOptions, parseStreamingPath } from './index.js';

describe('the agent\'s streaming paths', () => {
  it('names the endpoint, pod, uid and container as kubelet\'s routes do', () => {
    expect(isStreamingPath('/exec/ns/p/c')).toBe(true);
    expect(isStreamingPath('/pods')).toBe(false);
    expect(parseStreamingPath('/exec/ns/p/c?command=ls&command=-l&output=1')).toMatchObject({ kind: 'exec', ref: { namespace: 'ns', pod: 'p', uid: '', container: 'c' } });
    expect(parseStreamingPath('/exec/ns/p/c?command=ls&command=-l')!.query.getAll('command')).toEqual(['ls', '-l']);
    expect(parseStreamingPath('/attach/ns/p/u-1/c')!.ref).toEqual({ namespace: 'ns', pod: 'p', uid: 'u-1', container: 'c' });
    expect(parseStreamingPath('/portForward/ns/p')!.ref).toEqual({ namespace: 'ns', pod: 'p', uid: '', container: '' });
    expect(parseStreamingPath('/containerLogs/ns/p/c')!.kind).toBe('containerLogs');
    expect(parseStreamingPath('/containerLogs/ns/p')).toBeUndefined();
    expect(parseStreamingPath('/exec/ns//c')).toBeUndefined();
  });

  it('reads the log options the API server passes on', () => {
    expect(logOptions(new URLSearchParams('follow=true&tailLines=3&limitBytes=10&timestamps=true&sinceSeconds=5'))).toEqual({ follow: true, tailLines: 3, limitBytes: 10, timestamps: true, sinceSeconds: 5 });
    expect(logOptions(new URLSearchParams('tailLines=-1&limitBytes=0'))).toEqual({});
  });

  it('ends a command with kube\'s Status: Success, or NonZeroExitCode with the ExitCode cause', () => {
    expect(exitStatus(['true'], { code: 0 })).toEqual({ metadata: {}, status: 'Success' });
    expect(exitStatus(['sh', '-c', 'exit 3'], { code: 3 })).toMatchObject({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '3' }] } });
    expect(exitStatus(['nope'], { error: 'not found' })).toMatchObject({ status: 'Failure', message: 'not found' });
  });
});
