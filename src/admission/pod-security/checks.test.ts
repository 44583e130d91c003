import { describe, it, expect } from 'vitest';
import { Evaluator, aggregate, forbiddenDetail, forbiddenReason, DEFAULT_CHECKS } from './checks.js';
import { LATEST, minorVersion, type Level, type Version } from './api.js';

const ev = new Evaluator();
const good = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } };
const c = (name: string, securityContext?: any, extra: any = {}) => ({ name, image: 'nginx', ...(securityContext ? { securityContext } : {}), ...extra });

function detail(level: Level, spec: any, meta: any = {}, version: Version = LATEST): string {
  const r = aggregate(ev.evaluate({ level, version }, meta, spec));
  return r.allowed ? 'ALLOWED' : forbiddenDetail(r);
}

describe('the 1.33 check registry', () => {
  it('has every check once, with increasing versions and overrides of baseline checks only', () => {
    const ids = DEFAULT_CHECKS.map((x) => x.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const chk of DEFAULT_CHECKS) {
      const mins = chk.versions.map((v) => v.minor);
      expect([...mins].sort((a, b) => a - b)).toEqual(mins);
      for (const v of chk.versions) for (const o of v.overrides ?? []) {
        expect(chk.level).toBe('restricted');
        expect(DEFAULT_CHECKS.find((x) => x.id === o)?.level).toBe('baseline');
      }
    }
    // the newest form any check names is 1.32 (sysctls); later versions and latest run it
    expect(ev.maxMinor).toBe(32);
  });

  it('privileged checks nothing', () => {
    expect(ev.evaluate({ level: 'privileged', version: LATEST }, {}, { hostPID: true, containers: [c('a', { privileged: true })] })).toEqual([]);
  });

  it('restricted reports baseline failures first, each group in check-ID order (kube\'s message for nginx)', () => {
    expect(detail('restricted', { containers: [c('web')] })).toBe(
      'allowPrivilegeEscalation != false (container "web" must set securityContext.allowPrivilegeEscalation=false), ' +
        'unrestricted capabilities (container "web" must set securityContext.capabilities.drop=["ALL"]), ' +
        'runAsNonRoot != true (pod or container "web" must set securityContext.runAsNonRoot=true), ' +
        'seccompProfile (pod or container "web" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    );
    const r = aggregate(ev.evaluate({ level: 'restricted', version: LATEST }, {}, { hostPID: true, containers: [c('a', { ...good, privileged: true })] }));
    expect(forbiddenReason(r)).toBe('host namespaces, privileged');
  });

  it('visits init, then regular, then ephemeral containers', () => {
    expect(detail('restricted', { initContainers: [c('i')], containers: [c('a'), c('b', good)], ephemeralContainers: [c('e', { ...good, allowPrivilegeEscalation: true })] })).toMatch(
      /^allowPrivilegeEscalation != false \(containers "i", "a", "e" must set/,
    );
  });
});

describe('baseline checks (messages as kube 1.33 words them)', () => {
  const cases: Array<[string, any, string, any?]> = [
    ['privileged', { containers: [c('a', { privileged: true }), c('b', { privileged: true })] }, 'privileged (containers "a", "b" must not set securityContext.privileged=true)'],
    ['host namespaces', { hostNetwork: true, hostPID: true, hostIPC: true, containers: [c('a')] }, 'host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)'],
    ['hostPath', { volumes: [{ name: 'h', hostPath: { path: '/' } }, { name: 'e', emptyDir: {} }], containers: [c('a')] }, 'hostPath volumes (volume "h")'],
    [
      'host ports (sorted as strings)',
      { containers: [c('a', undefined, { ports: [{ containerPort: 80, hostPort: 8080 }, { containerPort: 1, hostPort: 443 }] }), c('b', undefined, { ports: [{ containerPort: 2, hostPort: 0 }] })] },
      'hostPort (container "a" uses hostPorts 443, 8080)',
    ],
    [
      'capabilities',
      { containers: [c('a', { capabilities: { add: ['SYS_ADMIN', 'CHOWN', 'NET_ADMIN'] } })] },
      'non-default capabilities (container "a" must not include "NET_ADMIN", "SYS_ADMIN" in securityContext.capabilities.add)',
    ],
    [
      'AppArmor field and annotations',
      { securityContext: { appArmorProfile: { type: 'Unconfined' } }, containers: [c('a', { appArmorProfile: { type: 'Unconfined' } })] },
      'forbidden AppArmor profiles (pod and container "a" and annotation must not set AppArmor profile type to "Unconfined", "container.apparmor.security.beta.kubernetes.io/a="unconfined"")',
      { annotations: { 'container.apparmor.security.beta.kubernetes.io/a': 'unconfined', 'container.apparmor.security.beta.kubernetes.io/b': 'localhost/x' } },
    ],
    [
      'SELinux',
      { securityContext: { seLinuxOptions: { type: 'spc_t', user: 'u' } }, containers: [c('a', { seLinuxOptions: { role: 'r' } })] },
      'seLinuxOptions (pod and container "a" set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set; role may not be set)',
    ],
    ['procMount', { containers: [c('a', { procMount: 'Unmasked' })] }, 'procMount (container "a" must not set securityContext.procMount to "Unmasked")'],
    [
      'seccomp',
      { securityContext: { seccompProfile: { type: 'Unconfined' } }, containers: [c('a', { seccompProfile: { type: 'Unconfined' } }), c('b')] },
      'seccompProfile (pod and container "a" must not set securityContext.seccompProfile.type to "Unconfined")',
    ],
    ['sysctls', { securityContext: { sysctls: [{ name: 'kernel.msgmax' }, { name: 'net.ipv4.tcp_rmem' }, { name: 'net.core.somaxconn' }] }, containers: [c('a')] }, 'forbidden sysctls (kernel.msgmax, net.core.somaxconn)'],
    [
      'hostProcess',
      { securityContext: { windowsOptions: { hostProcess: true } }, containers: [c('a', { windowsOptions: { hostProcess: true } })] },
      'hostProcess (pod and container "a" must not set securityContext.windowsOptions.hostProcess=true)',
    ],
  ];
  for (const [name, spec, want, meta] of cases) {
    it(name, () => expect(detail('baseline', spec, meta ?? {})).toBe(want));
  }

  it('sysctls allowed grow with the version (1.27, 1.29, 1.32)', () => {
    const spec = (n: string) => ({ securityContext: { sysctls: [{ name: n }] }, containers: [c('a')] });
    expect(detail('baseline', spec('net.ipv4.ip_local_reserved_ports'), {}, minorVersion(26))).toBe('forbidden sysctls (net.ipv4.ip_local_reserved_ports)');
    expect(detail('baseline', spec('net.ipv4.ip_local_reserved_ports'), {}, minorVersion(27))).toBe('ALLOWED');
    expect(detail('baseline', spec('net.ipv4.tcp_keepalive_time'), {}, minorVersion(28))).toBe('forbidden sysctls (net.ipv4.tcp_keepalive_time)');
    expect(detail('baseline', spec('net.ipv4.tcp_keepalive_time'), {}, minorVersion(29))).toBe('ALLOWED');
    expect(detail('baseline', spec('net.ipv4.tcp_wmem'), {}, minorVersion(31))).toBe('forbidden sysctls (net.ipv4.tcp_wmem)');
    expect(detail('baseline', spec('net.ipv4.tcp_wmem'), {}, minorVersion(32))).toBe('ALLOWED');
    expect(detail('baseline', spec('net.ipv4.tcp_wmem'), {}, minorVersion(99))).toBe('ALLOWED');
  });

  it('container_engine_t is an allowed SELinux type from 1.31', () => {
    const spec = { containers: [c('a', { seLinuxOptions: { type: 'container_engine_t' } })] };
    expect(detail('baseline', spec, {}, minorVersion(30))).toBe('seLinuxOptions (container "a" set forbidden securityContext.seLinuxOptions: type "container_engine_t")');
    expect(detail('baseline', spec, {}, minorVersion(31))).toBe('ALLOWED');
  });

  it('before 1.19 seccomp is read from the alpha annotations', () => {
    const meta = { annotations: { 'seccomp.security.alpha.kubernetes.io/pod': 'unconfined', 'container.seccomp.security.alpha.kubernetes.io/a': 'docker/default' } };
    const spec = { containers: [c('a')] };
    expect(detail('baseline', spec, meta, minorVersion(18))).toBe('seccompProfile (forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined")');
    expect(detail('baseline', spec, meta, minorVersion(19))).toBe('ALLOWED');
  });
});

describe('restricted checks', () => {
  it('volume types: only the allowed inline sources (image included in 1.33)', () => {
    const spec = {
      volumes: [{ name: 'h', hostPath: { path: '/' } }, { name: 'n', nfs: {} }, { name: 'i', image: { reference: 'x' } }, { name: 'g', gitRepo: {} }, { name: 'p', projected: {} }],
      containers: [c('a', good)],
    };
    expect(detail('restricted', spec)).toBe('restricted volume types (volumes "h", "n", "g" use restricted volume types "gitRepo", "hostPath", "nfs")');
    // restricted's volume check replaces baseline's hostPath check
    expect(detail('baseline', spec)).toBe('hostPath volumes (volume "h")');
  });

  it('runAsNonRoot and runAsUser', () => {
    const spec = { securityContext: { runAsNonRoot: false, runAsUser: 0 }, containers: [c('a', { ...good, runAsNonRoot: undefined, runAsUser: 0 }), c('b', { ...good, runAsNonRoot: false })] };
    expect(detail('restricted', spec)).toBe(
      'runAsNonRoot != true (pod and container "b" must not set securityContext.runAsNonRoot=false), runAsUser=0 (pod and container "a" must not set runAsUser=0)',
    );
    // runAsUser is checked from 1.23 only
    expect(detail('restricted', spec, {}, minorVersion(22))).toBe('runAsNonRoot != true (pod and container "b" must not set securityContext.runAsNonRoot=false)');
  });

  it('capabilities: drop ALL, add nothing but NET_BIND_SERVICE; from 1.22, with baseline\'s check before', () => {
    const spec = { containers: [c('a', { ...good, capabilities: { add: ['NET_BIND_SERVICE', 'SYS_ADMIN'], drop: ['ALL'] } }), c('b', { ...good, capabilities: { add: ['CHOWN'] } })] };
    expect(detail('restricted', spec)).toBe(
      'unrestricted capabilities (container "b" must set securityContext.capabilities.drop=["ALL"]; containers "a", "b" must not include "CHOWN", "SYS_ADMIN" in securityContext.capabilities.add)',
    );
    expect(detail('restricted', spec, {}, minorVersion(21))).toBe('non-default capabilities (container "a" must not include "SYS_ADMIN" in securityContext.capabilities.add)');
  });

  it('allowPrivilegeEscalation from 1.8; Windows pods skip it, capabilities and seccomp from 1.25', () => {
    const spec = { os: { name: 'windows' }, securityContext: { runAsNonRoot: true }, containers: [c('a')] };
    expect(detail('restricted', spec)).toBe('ALLOWED');
    expect(forbiddenReason(aggregate(ev.evaluate({ level: 'restricted', version: minorVersion(24) }, {}, spec)))).toBe('allowPrivilegeEscalation != false, unrestricted capabilities, seccompProfile');
    expect(forbiddenReason(aggregate(ev.evaluate({ level: 'restricted', version: minorVersion(7) }, {}, { containers: [c('a', { runAsNonRoot: true })] })))).toBe('');
  });

  it('seccomp set at the pod covers the containers; a bad container value is named', () => {
    expect(detail('restricted', { securityContext: { runAsNonRoot: true, seccompProfile: { type: 'Localhost' } }, containers: [c('a', { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } })] })).toBe('ALLOWED');
    expect(detail('restricted', { securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } }, containers: [c('a', { ...good, seccompProfile: { type: 'Unconfined' } })] })).toBe(
      'seccompProfile (container "a" must not set securityContext.seccompProfile.type to "Unconfined")',
    );
  });
});

describe('user namespaces', () => {
  it('hostUsers: false relaxes runAsNonRoot, runAsUser and procMount only under UserNamespacesPodSecurityStandards', async () => {
    const { features } = await import('../../features.js');
    const spec = { hostUsers: false, securityContext: { runAsUser: 0 }, containers: [c('a', { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' }, procMount: 'Unmasked' })] };
    expect(forbiddenReason(aggregate(ev.evaluate({ level: 'restricted', version: LATEST }, {}, spec)))).toBe('procMount, runAsNonRoot != true, runAsUser=0');
    features.set('UserNamespacesPodSecurityStandards=true');
    try {
      expect(detail('restricted', spec)).toBe('ALLOWED');
    } finally {
      features.reset();
    }
  });
});
