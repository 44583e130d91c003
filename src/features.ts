// Feature gates (--feature-gates), with kube-apiserver 1.33's stages and defaults for the
// gates this server knows (spec 9.5). Parsed once at start-up on the main thread and then
// only read; `features` is the process-wide gate set every module consults.
//
// As in k8s.io/component-base/featuregate: an unknown gate is a start-up error, a gate
// locked to its default (GA, or deprecated and locked) cannot be set to another value,
// and setting a GA or deprecated gate prints a warning that it will be removed.

export type Stage = 'ALPHA' | 'BETA' | 'GA' | 'DEPRECATED';

export interface GateSpec {
  stage: Stage;
  default: boolean;
  locked?: boolean;
}

export const KNOWN_GATES: Record<string, GateSpec> = {
  // served representations and reads
  APIResponseCompression: { stage: 'BETA', default: true },
  CBORServingAndStorage: { stage: 'ALPHA', default: false },
  WatchList: { stage: 'BETA', default: false },
  ConsistentListFromCache: { stage: 'BETA', default: true },
  ListFromCacheSnapshot: { stage: 'ALPHA', default: false },
  ResilientWatchCacheInitialization: { stage: 'BETA', default: true },
  WatchFromStorageWithoutResourceVersion: { stage: 'BETA', default: false },
  WatchCacheInitializationPostStartHook: { stage: 'BETA', default: false },
  SeparateCacheWatchRPC: { stage: 'DEPRECATED', default: true },
  ConcurrentWatchObjectDecode: { stage: 'BETA', default: false },
  StorageVersionHash: { stage: 'BETA', default: true },
  // writes and validation
  AllowUnsafeMalformedObjectDeletion: { stage: 'ALPHA', default: false },
  HPAScaleToZero: { stage: 'ALPHA', default: false },
  DeclarativeValidation: { stage: 'BETA', default: true },
  DeclarativeValidationTakeover: { stage: 'BETA', default: false },
  RetryGenerateName: { stage: 'GA', default: true, locked: true },
  ServerSideApply: { stage: 'GA', default: true, locked: true },
  ServerSideFieldValidation: { stage: 'GA', default: true, locked: true },
  APIListChunking: { stage: 'GA', default: true, locked: true },
  // health, node agent, other
  ComponentSLIs: { stage: 'BETA', default: true },
  ComponentFlagz: { stage: 'ALPHA', default: false },
  ComponentStatusz: { stage: 'ALPHA', default: false },
  ContainerCheckpoint: { stage: 'BETA', default: true },
  SystemdWatchdog: { stage: 'BETA', default: true },
  AnonymousAuthConfigurableEndpoints: { stage: 'BETA', default: true },
  StructuredAuthenticationConfiguration: { stage: 'BETA', default: true },
  OpenAPIEnums: { stage: 'BETA', default: true },
  StorageVersionAPI: { stage: 'ALPHA', default: false },
  UnknownVersionInteroperabilityProxy: { stage: 'ALPHA', default: false },
  MutatingAdmissionPolicy: { stage: 'ALPHA', default: false },
  KMSv1: { stage: 'DEPRECATED', default: false },
  AllAlpha: { stage: 'ALPHA', default: false },
  AllBeta: { stage: 'BETA', default: false },
};

export class FeatureGateError extends Error {}

export class FeatureGates {
  private values = new Map<string, boolean>();
  readonly warnings: string[] = [];

  constructor(readonly known: Record<string, GateSpec> = KNOWN_GATES) {}

  enabled(name: string): boolean {
    const v = this.values.get(name);
    if (v !== undefined) return v;
    const spec = this.known[name];
    if (!spec) throw new Error(`feature "${name}" is not registered in FeatureGate`);
    if (spec.stage === 'ALPHA' && name !== 'AllAlpha' && this.values.get('AllAlpha')) return true;
    if (spec.stage === 'BETA' && name !== 'AllBeta' && this.values.get('AllBeta')) return true;
    return spec.default;
  }

  /** Applies `Gate=true,Other=false` as kube's --feature-gates does; throws on a bad entry. */
  set(value: string): void {
    const parsed = new Map<string, boolean>();
    for (const raw of value.split(',')) {
      const s = raw.trim();
      if (s === '') continue;
      const eq = s.indexOf('=');
      if (eq < 0) throw new FeatureGateError(`missing bool value for ${s}`);
      const k = s.slice(0, eq).trim();
      const v = s.slice(eq + 1).trim();
      const b = parseGoBool(v);
      if (b === undefined) throw new FeatureGateError(`invalid value of ${k}=${v}, err: strconv.ParseBool: parsing ${JSON.stringify(v)}: invalid syntax`);
      parsed.set(k, b);
    }
    for (const [k, b] of parsed) {
      const spec = this.known[k];
      if (!spec) throw new FeatureGateError(`unrecognized feature gate: ${k}`);
      if (spec.locked && b !== spec.default) throw new FeatureGateError(`cannot set feature gate ${k} to ${b}, feature is locked to ${spec.default}`);
      this.values.set(k, b);
      if (spec.stage === 'DEPRECATED') this.warnings.push(`Setting deprecated feature gate ${k}=${b}. It will be removed in a future release.`);
      else if (spec.stage === 'GA') this.warnings.push(`Setting GA feature gate ${k}=${b}. It will be removed in a future release.`);
    }
  }

  /** Puts every gate back to its default (tests). */
  reset(): void {
    this.values.clear();
    this.warnings.length = 0;
  }

  /** `Gate=value` pairs of the gates set explicitly, for logs. */
  describe(): string {
    return [...this.values].map(([k, v]) => `${k}=${v}`).join(',');
  }
}

function parseGoBool(v: string): boolean | undefined {
  if (/^(1|t|T|TRUE|true|True)$/.test(v)) return true;
  if (/^(0|f|F|FALSE|false|False)$/.test(v)) return false;
  return undefined;
}

/** The process's gates. The server sets them from --feature-gates before anything serves. */
export const features = new FeatureGates();
