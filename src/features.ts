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

/**
 * The rest of kube-apiserver 1.33's gates (pkg/features, k8s.io/apiserver, apiextensions,
 * component-base logging and metrics, client-go), "Name STAGE default [locked]": registered so
 * that --feature-gates accepts them as kube-apiserver does, even where they change nothing here.
 * The gates above, which this server consults, keep their entries.
 */
const OTHER_GATES = [
  'AllowDNSOnlyNodeCSR DEPRECATED false',
  'AllowInsecureKubeletCertificateSigningRequests DEPRECATED false',
  'AllowOverwriteTerminationGracePeriodSeconds DEPRECATED false',
  'AllowServiceLBStatusOnNonLB DEPRECATED false locked',
  'AnyVolumeDataSource GA true locked',
  'AppArmor GA true locked',
  'AppArmorFields GA true locked',
  'AuthorizeNodeWithSelectors BETA true',
  'CloudControllerManagerWebhook ALPHA false',
  'ClusterTrustBundle BETA false',
  'ClusterTrustBundleProjection BETA false',
  'ContainerCheckpoint BETA true',
  'ContainerStopSignals ALPHA false',
  'CustomCPUCFSQuotaPeriod ALPHA false',
  'CPUManager GA true locked',
  'CPUManagerPolicyAlphaOptions ALPHA false',
  'CPUManagerPolicyBetaOptions BETA true',
  'CPUManagerPolicyOptions BETA true',
  'CronJobsScheduledAnnotation GA true locked',
  'CRDValidationRatcheting BETA true',
  'CrossNamespaceVolumeDataSource ALPHA false',
  'CSIMigrationPortworx GA true locked',
  'CSIVolumeHealth ALPHA false',
  'CustomResourceFieldSelectors GA true locked',
  'DeploymentPodReplacementPolicy ALPHA false',
  'DevicePluginCDIDevices GA true locked',
  'DisableAllocatorDualWrite BETA false',
  'DisableCloudProviders GA true locked',
  'DisableKubeletCloudCredentialProviders GA true locked',
  'DisableNodeKubeProxyVersion DEPRECATED false',
  'DRAAdminAccess ALPHA false',
  'DRADeviceTaints ALPHA false',
  'DRAPartitionableDevices ALPHA false',
  'DRAPrioritizedList ALPHA false',
  'DRAResourceClaimDeviceStatus ALPHA false',
  'DynamicResourceAllocation BETA false',
  'ElasticIndexedJob GA true locked',
  'EventedPLEG ALPHA false',
  'ExecProbeTimeout GA true',
  'ExternalServiceAccountTokenSigner ALPHA false',
  'GracefulNodeShutdown BETA true',
  'GracefulNodeShutdownBasedOnPodPriority BETA true',
  'HonorPVReclaimPolicy BETA true',
  'HPAConfigurableTolerance ALPHA false',
  'HPAScaleToZero ALPHA false',
  'ImageMaximumGCAge BETA true',
  'ImageVolume BETA false',
  'InPlacePodVerticalScaling BETA true',
  'InPlacePodVerticalScalingAllocatedStatus ALPHA false',
  'InPlacePodVerticalScalingExclusiveCPUs ALPHA false',
  'InTreePluginPortworxUnregister ALPHA false',
  'JobBackoffLimitPerIndex GA true locked',
  'JobManagedBy BETA true',
  'JobPodFailurePolicy GA true locked',
  'JobPodReplacementPolicy BETA true',
  'JobSuccessPolicy GA true locked',
  'KubeletCgroupDriverFromCRI BETA true',
  'KubeletCrashLoopBackOffMax ALPHA false',
  'KubeletFineGrainedAuthz BETA true',
  'KubeletInUserNamespace ALPHA false',
  'KubeletPodResourcesDynamicResources ALPHA false',
  'KubeletPodResourcesGet ALPHA false',
  'KubeletPSI ALPHA false',
  'KubeletRegistrationGetOnExistsOnly DEPRECATED false',
  'KubeletSeparateDiskGC BETA true',
  'KubeletTracing BETA true',
  'LoadBalancerIPMode GA true locked',
  'LocalStorageCapacityIsolationFSQuotaMonitoring BETA false',
  'LogarithmicScaleDown GA true locked',
  'MatchLabelKeysInPodAffinity BETA true',
  'MatchLabelKeysInPodTopologySpread BETA true',
  'MaxUnavailableStatefulSet ALPHA false',
  'MemoryManager GA true locked',
  'MemoryQoS ALPHA false',
  'MultiCIDRServiceAllocator GA true',
  'MutableCSINodeAllocatableCount ALPHA false',
  'NFTablesProxyMode GA true locked',
  'NodeInclusionPolicyInPodTopologySpread BETA true',
  'NodeLogQuery BETA false',
  'NodeSwap BETA true',
  'OrderedNamespaceDeletion BETA true',
  'PersistentVolumeLastPhaseTransitionTime GA true locked',
  'PodAndContainerStatsFromCRI ALPHA false',
  'PodDeletionCost BETA true',
  'PodDisruptionConditions GA true locked',
  'PodIndexLabel GA true locked',
  'PodLevelResources ALPHA false',
  'PodLifecycleSleepAction BETA true',
  'PodLifecycleSleepActionAllowZero BETA true',
  'PodLogsQuerySplitStreams ALPHA false',
  'PodObservedGenerationTracking ALPHA false',
  'PodReadyToStartContainersCondition BETA true',
  'PodSchedulingReadiness GA true locked',
  'PortForwardWebsockets BETA true',
  'PreferSameTrafficDistribution ALPHA false',
  'ProcMountType BETA false',
  'QOSReserved ALPHA false',
  'RecoverVolumeExpansionFailure BETA true',
  'RecursiveReadOnlyMounts BETA true',
  'RelaxedDNSSearchValidation BETA true',
  'RelaxedEnvironmentVariableValidation BETA true',
  'ReloadKubeletServerCertificateFile BETA true',
  'ResourceHealthStatus ALPHA false',
  'RotateKubeletServerCertificate BETA true',
  'RuntimeClassInImageCriAPI ALPHA false',
  'SchedulerAsyncPreemption ALPHA false',
  'SchedulerQueueingHints BETA true',
  'SELinuxChangePolicy BETA true',
  'SELinuxMount BETA false',
  'SELinuxMountReadWriteOncePod BETA true',
  'SeparateTaintEvictionController BETA true',
  'ServiceAccountNodeAudienceRestriction BETA true',
  'ServiceAccountTokenJTI GA true locked',
  'ServiceAccountTokenNodeBinding GA true locked',
  'ServiceAccountTokenNodeBindingValidation GA true locked',
  'ServiceAccountTokenPodNodeInfo GA true locked',
  'ServiceTrafficDistribution GA true locked',
  'SidecarContainers GA true locked',
  'SizeMemoryBackedVolumes GA true locked',
  'StatefulSetAutoDeletePVC GA true locked',
  'StatefulSetStartOrdinal GA true locked',
  'StorageCapacityScoring ALPHA false',
  'StorageNamespaceIndex BETA true',
  'StorageVersionMigrator ALPHA false',
  'StrictIPCIDRValidation ALPHA false',
  'SupplementalGroupsPolicy BETA true',
  'SystemdWatchdog BETA true',
  'TopologyAwareHints GA true locked',
  'TopologyManagerPolicyAlphaOptions ALPHA false',
  'TopologyManagerPolicyBetaOptions BETA true',
  'TopologyManagerPolicyOptions GA true',
  'TranslateStreamCloseWebsocketRequests BETA true',
  'UnknownVersionInteroperabilityProxy ALPHA false',
  'UserNamespacesPodSecurityStandards ALPHA false',
  'UserNamespacesSupport BETA true',
  'VolumeAttributesClass BETA false',
  'VolumeCapacityPriority ALPHA false',
  'WinDSR ALPHA false',
  'WindowsCPUAndMemoryAffinity ALPHA false',
  'WindowsGracefulNodeShutdown ALPHA false',
  'WindowsHostNetwork ALPHA true',
  'WinOverlay BETA true',
  'AdmissionWebhookMatchConditions GA true locked',
  'AggregatedDiscoveryEndpoint GA true locked',
  'AllowParsingUserUIDFromCertAuth BETA true',
  'AnonymousAuthConfigurableEndpoints BETA true',
  'APIServerIdentity BETA true',
  'APIServerTracing BETA true',
  'APIServingWithRoutine ALPHA false',
  'AuthorizeWithSelectors BETA true',
  'BtreeWatchCache BETA true',
  'CoordinatedLeaderElection ALPHA false',
  'RemainingItemCount GA true locked',
  'RemoteRequestHeaderUID BETA true',
  'StreamingCollectionEncodingToJSON BETA true',
  'StreamingCollectionEncodingToProtobuf BETA true',
  'StrictCostEnforcementForVAP GA true locked',
  'StrictCostEnforcementForWebhooks GA true locked',
  'StructuredAuthorizationConfiguration GA true locked',
  'UnauthenticatedHTTP2DOSMitigation BETA true',
  'ContextualLogging BETA true',
  'LoggingAlphaOptions ALPHA false',
  'LoggingBetaOptions BETA true',
  'ClientsAllowCBOR ALPHA false',
  'ClientsPreferCBOR ALPHA false',
  'InformerResourceVersion ALPHA false',
  'InOrderInformers BETA true',
  'WatchListClient BETA false',
];

for (const row of OTHER_GATES) {
  const [name, stage, def, locked] = row.split(' ');
  if (KNOWN_GATES[name]) continue;
  KNOWN_GATES[name] = { stage: stage as Stage, default: def === 'true', ...(locked ? { locked: true } : {}) };
}

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
