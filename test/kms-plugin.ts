// A local KMS v2 plugin for the tests: the k8s.io/kms/apis/v2 KeyManagementService over
// gRPC on a unix socket. It "encrypts" with AES-256-GCM under an in-memory key per key id;
// the current key id can be changed (a KEK rotation) and the plugin made to fail.
//
// Thread ownership: the test's thread.
import * as grpc from '@grpc/grpc-js';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { codec, SERVICE } from '../src/storage/encryption/kms-service.js';

export interface KmsPlugin {
  /** unix:///path, for the configuration's endpoint */
  endpoint: string;
  /** the key id Status and Encrypt answer with */
  keyId: string;
  /** when set, every call fails with gRPC Unavailable and this message */
  failing: string | null;
  /** Status answers this healthz (default "ok") */
  healthz: string;
  calls: { status: number; encrypt: number; decrypt: number };
  /** annotations Encrypt returns */
  annotations: Record<string, Buffer>;
  close(): Promise<void>;
}

export async function startKmsPlugin(socketPath: string, keyId = 'key-1'): Promise<KmsPlugin> {
  const keks = new Map<string, Buffer>();
  const kek = (id: string) => {
    let k = keks.get(id);
    if (!k) keks.set(id, (k = randomBytes(32)));
    return k;
  };
  const server = new grpc.Server();
  const plugin: KmsPlugin = {
    endpoint: `unix://${socketPath}`,
    keyId,
    failing: null,
    healthz: 'ok',
    calls: { status: 0, encrypt: 0, decrypt: 0 },
    annotations: {},
    close: () => new Promise((resolve) => server.tryShutdown(() => resolve())),
  };
  const fail = (cb: grpc.sendUnaryData<unknown>) => {
    cb({ code: grpc.status.UNAVAILABLE, details: plugin.failing! } as grpc.ServiceError, null);
    return true;
  };
  const method = (name: string, req: { encode: (r: any) => Buffer; decode: (b: Buffer) => any }, res: { encode: (r: any) => Buffer; decode: (b: Buffer) => any }) => ({
    path: `${SERVICE}/${name}`,
    requestStream: false,
    responseStream: false,
    requestSerialize: req.encode,
    requestDeserialize: req.decode,
    responseSerialize: res.encode,
    responseDeserialize: res.decode,
  });
  server.addService(
    {
      Status: method('Status', codec.empty, codec.statusResponse),
      Encrypt: method('Encrypt', codec.encryptRequest, codec.encryptResponse),
      Decrypt: method('Decrypt', codec.decryptRequest, codec.decryptResponse),
    } as grpc.ServiceDefinition,
    {
      Status: (_call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        plugin.calls.status++;
        if (plugin.failing) return fail(cb);
        cb(null, { version: 'v2', healthz: plugin.healthz, keyId: plugin.keyId });
      },
      Encrypt: (call: grpc.ServerUnaryCall<{ plaintext: Buffer }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        plugin.calls.encrypt++;
        if (plugin.failing) return fail(cb);
        const nonce = randomBytes(12);
        const c = createCipheriv('aes-256-gcm', kek(plugin.keyId), nonce);
        const ct = Buffer.concat([nonce, c.update(call.request.plaintext), c.final(), c.getAuthTag()]);
        cb(null, { ciphertext: ct, keyId: plugin.keyId, annotations: plugin.annotations });
      },
      Decrypt: (call: grpc.ServerUnaryCall<{ ciphertext: Buffer; keyId: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        plugin.calls.decrypt++;
        if (plugin.failing) return fail(cb);
        const { ciphertext, keyId: id } = call.request;
        try {
          const d = createDecipheriv('aes-256-gcm', kek(id), ciphertext.subarray(0, 12));
          d.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
          const plain = Buffer.concat([d.update(ciphertext.subarray(12, ciphertext.length - 16)), d.final()]);
          cb(null, { plaintext: plain });
        } catch {
          cb({ code: grpc.status.INVALID_ARGUMENT, details: 'cannot decrypt' } as grpc.ServiceError, null);
        }
      },
    } as grpc.UntypedServiceImplementation,
  );
  await new Promise<void>((resolve, reject) => server.bindAsync(`unix://${socketPath}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
  return plugin;
}
