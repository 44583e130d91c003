// Zero scalars in protobuf request bodies: which ones the JSON form keeps (generated
// per-type facts, protoKeepZero), checked against what kube-apiserver 1.33 returns for the
// same Go object.
import { describe, expect, it } from 'vitest';
import { decodeProtobufObject } from './protobuf.js';
import { protoRoot } from './protobuf-encode.js';
import { protoKeepZero } from './proto-schema.js';

/** A body as client-go writes it: every field given here is on the wire, zeros included. */
function body(apiVersion: string, kind: string, typeName: string, obj: any): Buffer {
  const T = protoRoot().lookupType(typeName);
  const U = protoRoot().lookupType('k8s.io.apimachinery.pkg.runtime.Unknown');
  const raw = T.encode(T.fromObject(obj)).finish();
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), Buffer.from(U.encode({ typeMeta: { apiVersion, kind }, raw }).finish())]);
}

describe('protobuf zero scalars, per type and field', () => {
  it('Service: publishNotReadyAddresses false and nodePort 0 dropped (omitempty), allocateLoadBalancerNodePorts false kept (pointer), port kept (required)', () => {
    const obj = decodeProtobufObject(
      body('v1', 'Service', 'k8s.io.api.core.v1.Service', {
        metadata: { name: 'x' },
        spec: {
          ports: [{ name: '80', protocol: 'TCP', port: 80, nodePort: 0, targetPort: { type: 0, intVal: 80 } }],
          type: 'ClusterIP',
          publishNotReadyAddresses: false,
          healthCheckNodePort: 0,
          sessionAffinity: '',
          allocateLoadBalancerNodePorts: false,
        },
      }),
    );
    expect(obj.spec).toEqual({ ports: [{ name: '80', protocol: 'TCP', port: 80, targetPort: 80 }], type: 'ClusterIP', allocateLoadBalancerNodePorts: false });
  });

  it('ReplicaSet: status.replicas 0 kept (required), spec.replicas 0 kept (pointer), minReadySeconds 0 dropped', () => {
    const obj = decodeProtobufObject(
      body('apps/v1', 'ReplicaSet', 'k8s.io.api.apps.v1.ReplicaSet', { metadata: { name: 'rs' }, spec: { replicas: 0, minReadySeconds: 0 }, status: { replicas: 0, availableReplicas: 0 } }),
    );
    expect(obj.spec).toEqual({ replicas: 0 });
    expect(obj.status).toEqual({ replicas: 0 });
  });

  it('Deployment: status.replicas 0 dropped (omitempty there), paused false dropped, collisionCount 0 kept (pointer)', () => {
    const obj = decodeProtobufObject(
      body('apps/v1', 'Deployment', 'k8s.io.api.apps.v1.Deployment', {
        metadata: { name: 'd' },
        spec: { replicas: 0, paused: false, minReadySeconds: 0 },
        status: { replicas: 0, readyReplicas: 0, collisionCount: 0 },
      }),
    );
    expect(obj.spec).toEqual({ replicas: 0 });
    expect(obj.status).toEqual({ collisionCount: 0 });
  });

  it('Pod: containerPort 0 kept (no omitempty), hostPort 0 and stdin false dropped, ready false kept in containerStatuses', () => {
    const obj = decodeProtobufObject(
      body('v1', 'Pod', 'k8s.io.api.core.v1.Pod', {
        metadata: { name: 'p' },
        spec: {
          containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 0, hostPort: 0, protocol: 'TCP' }], stdin: false, tty: false }],
          hostNetwork: false,
          automountServiceAccountToken: false,
          securityContext: { runAsUser: 0, runAsNonRoot: false },
        },
        status: { containerStatuses: [{ name: 'c', ready: false, restartCount: 0, image: 'i', imageID: '' }] },
      }),
    );
    expect(obj.spec).toEqual({
      containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 0, protocol: 'TCP' }] }],
      automountServiceAccountToken: false,
      securityContext: { runAsUser: 0, runAsNonRoot: false },
    });
    expect(obj.status.containerStatuses).toEqual([{ name: 'c', ready: false, restartCount: 0, image: 'i', imageID: '' }]);
  });

  it('EphemeralContainer (inline common fields): restartPolicy is a pointer, stdin is not', () => {
    expect(protoKeepZero['k8s.io.api.core.v1.EphemeralContainerCommon']).toContain('restartPolicy');
    expect(protoKeepZero['k8s.io.api.core.v1.EphemeralContainerCommon']).not.toContain('stdin');
  });

  it('PVC: storageClassName "" kept (pointer: no class), PV storageClassName "" dropped', () => {
    const pvc = decodeProtobufObject(body('v1', 'PersistentVolumeClaim', 'k8s.io.api.core.v1.PersistentVolumeClaim', { metadata: { name: 'c' }, spec: { storageClassName: '', volumeName: '' } }));
    expect(pvc.spec).toEqual({ storageClassName: '' });
    const pv = decodeProtobufObject(body('v1', 'PersistentVolume', 'k8s.io.api.core.v1.PersistentVolume', { metadata: { name: 'v' }, spec: { storageClassName: '' } }));
    expect(pv.spec).toEqual({});
  });

  it('Job (pointers throughout spec), NodeSpec.unschedulable and PriorityClass.globalDefault (not pointers)', () => {
    const job = decodeProtobufObject(body('batch/v1', 'Job', 'k8s.io.api.batch.v1.Job', { metadata: { name: 'j' }, spec: { parallelism: 0, backoffLimit: 0, suspend: false }, status: { active: 0, ready: 0 } }));
    expect(job.spec).toEqual({ parallelism: 0, backoffLimit: 0, suspend: false });
    expect(job.status).toEqual({ ready: 0 });
    const node = decodeProtobufObject(body('v1', 'Node', 'k8s.io.api.core.v1.Node', { metadata: { name: 'n' }, spec: { unschedulable: false } }));
    expect(node.spec).toEqual({});
    const pc = decodeProtobufObject(body('scheduling.k8s.io/v1', 'PriorityClass', 'k8s.io.api.scheduling.v1.PriorityClass', { metadata: { name: 'p' }, value: 0, globalDefault: false }));
    expect(pc).toEqual({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'p' }, value: 0 });
  });
});

describe('protobuf bodies without a JSON form (found by the fuzz suite, test/fuzz)', () => {
  const U = () => protoRoot().lookupType('k8s.io.apimachinery.pkg.runtime.Unknown');
  const wrap = (raw: Uint8Array) => Buffer.concat([Buffer.from('k8s\0', 'latin1'), Buffer.from(U().encode({ typeMeta: { apiVersion: 'v1', kind: 'ConfigMap' }, raw }).finish())]);
  const CM = () => protoRoot().lookupType('k8s.io.api.core.v1.ConfigMap');
  const code = (b: Buffer) => {
    try {
      decodeProtobufObject(b);
      return 'ok';
    } catch (e: any) {
      return e.constructor.name === 'StatusError' ? e.code : `${e.constructor.name}: ${e.message}`;
    }
  };

  it('a creationTimestamp beyond year 9999 is a 400, not a RangeError', () => {
    const raw = CM().encode(CM().fromObject({ metadata: { name: 'x', creationTimestamp: { seconds: 2 ** 53 } } })).finish();
    expect(code(wrap(raw))).toBe(400);
  });

  it('managedFields whose FieldsV1 bytes are not JSON are a 400, not a SyntaxError', () => {
    const raw = CM().encode(CM().fromObject({ metadata: { name: 'x', managedFields: [{ manager: 'm', fieldsType: 'FieldsV1', fieldsV1: { Raw: Buffer.from('{"f:') } }] } })).finish();
    expect(code(wrap(raw))).toBe(400);
  });
});
