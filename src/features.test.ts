import { describe, expect, it } from 'vitest';
import { FeatureGates, KNOWN_GATES } from './features.js';
import { parseArgs } from './options.js';

describe('feature gates', () => {
  it('has 1.33 defaults', () => {
    const f = new FeatureGates();
    expect(f.enabled('APIResponseCompression')).toBe(true);
    expect(f.enabled('CBORServingAndStorage')).toBe(false);
    expect(f.enabled('WatchList')).toBe(false);
    expect(f.enabled('DeclarativeValidation')).toBe(true);
    expect(f.enabled('DeclarativeValidationTakeover')).toBe(false);
    expect(f.enabled('AllowUnsafeMalformedObjectDeletion')).toBe(false);
    expect(f.enabled('ContainerCheckpoint')).toBe(true);
  });
  it('carries the gates of spec 9.5 at their stages and defaults', () => {
    const f = new FeatureGates();
    const table: Array<[string, string, boolean]> = [
      ['ServerSideApply', 'GA', true],
      ['ServerSideFieldValidation', 'GA', true],
      ['APIListChunking', 'GA', true],
      ['APIResponseCompression', 'BETA', true],
      ['WatchList', 'BETA', false],
      ['CBORServingAndStorage', 'ALPHA', false],
      ['AllowUnsafeMalformedObjectDeletion', 'ALPHA', false],
      ['DeclarativeValidation', 'BETA', true],
      ['DeclarativeValidationTakeover', 'BETA', false],
      ['ContainerCheckpoint', 'BETA', true],
      ['SystemdWatchdog', 'BETA', true],
    ];
    for (const [gate, stage, on] of table) {
      expect([gate, KNOWN_GATES[gate]?.stage, f.enabled(gate)]).toEqual([gate, stage, on]);
      // GA gates are locked on: turning one off is refused (spec 9.3 rule 8, 7 rule 7)
      if (stage === 'GA') expect(() => new FeatureGates().set(`${gate}=false`)).toThrowError(/locked/);
    }
  });
  it('sets gates, refuses unknown, locked and malformed ones, warns for GA and deprecated', () => {
    const f = new FeatureGates();
    f.set('CBORServingAndStorage=true, APIResponseCompression=false');
    expect(f.enabled('CBORServingAndStorage')).toBe(true);
    expect(f.enabled('APIResponseCompression')).toBe(false);
    expect(() => f.set('NoSuchGate=true')).toThrowError('unrecognized feature gate: NoSuchGate');
    expect(() => f.set('ServerSideApply=false')).toThrowError('cannot set feature gate ServerSideApply to false, feature is locked to true');
    expect(() => f.set('WatchList')).toThrowError('missing bool value for WatchList');
    expect(() => f.set('WatchList=maybe')).toThrowError(/invalid value of WatchList=maybe/);
    f.set('ServerSideApply=true,SeparateCacheWatchRPC=false');
    expect(f.warnings).toEqual([
      'Setting GA feature gate ServerSideApply=true. It will be removed in a future release.',
      'Setting deprecated feature gate SeparateCacheWatchRPC=false. It will be removed in a future release.',
    ]);
  });
  it('AllAlpha turns alpha gates on', () => {
    const f = new FeatureGates();
    f.set('AllAlpha=true');
    expect(f.enabled('CBORServingAndStorage')).toBe(true);
    expect(f.enabled('WatchList')).toBe(false);
  });
  it('--feature-gates is checked at parse time', () => {
    expect((parseArgs(['--feature-gates', 'CBORServingAndStorage=true']) as any).featureGates).toBe('CBORServingAndStorage=true');
    expect(() => parseArgs(['--feature-gates=Bogus=true'])).toThrowError('invalid argument "Bogus=true" for "--feature-gates" flag: unrecognized feature gate: Bogus');
  });
  it('knows every kube-apiserver 1.33 gate, including those that change nothing here', () => {
    const f = new FeatureGates();
    f.set('InPlacePodVerticalScaling=true,UserNamespacesSupport=false,DRAAdminAccess=true');
    expect(f.enabled('InPlacePodVerticalScaling')).toBe(true);
    expect(f.enabled('DRAAdminAccess')).toBe(true);
    expect(new FeatureGates().enabled('InPlacePodVerticalScaling')).toBe(true);
    expect(() => new FeatureGates().set('SidecarContainers=false')).toThrowError('cannot set feature gate SidecarContainers to false, feature is locked to true');
    expect((parseArgs(['--feature-gates', 'InPlacePodVerticalScaling=true']) as any).featureGates).toBe('InPlacePodVerticalScaling=true');
  });
});
