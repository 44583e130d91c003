// The client of a KMS v2 plugin: the k8s.io/kms/apis/v2 KeyManagementService (Status,
// Encrypt, Decrypt) over gRPC on a unix socket, each call bounded by the provider's
// timeout, as kube's kmsv2 grpc_service.go. Messages are encoded by hand (proto-wire.ts).
//
// Thread ownership: the thread that loaded the configuration; one channel per provider,
// closed with it.
import * as grpc from '@grpc/grpc-js';
import { bytesField, decodeMessage, encodeMessage, mapField, stringField } from './proto-wire.js';
import { TransformError } from './transformer.js';

export interface StatusResponse {
  version: string;
  healthz: string;
  keyId: string;
}
export interface EncryptResponse {
  ciphertext: Buffer;
  keyId: string;
  annotations: Record<string, Buffer>;
}
export interface DecryptRequest {
  ciphertext: Buffer;
  keyId: string;
  annotations: Record<string, Buffer>;
}

/** What the envelope transformer needs of a plugin (an interface so that tests may stand in). */
export interface KmsService {
  status(): Promise<StatusResponse>;
  encrypt(uid: string, plaintext: Buffer): Promise<EncryptResponse>;
  decrypt(uid: string, req: DecryptRequest): Promise<Buffer>;
  close(): void;
}

export const SERVICE = '/v2.KeyManagementService';

/** Go's codes.Code String() names, by number. */
export const GRPC_CODE_NAMES = ['OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists', 'PermissionDenied', 'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange', 'Unimplemented', 'Internal', 'Unavailable', 'DataLoss', 'Unauthenticated'];

// the messages of k8s.io/kms/apis/v2/api.proto
export const codec = {
  statusResponse: {
    encode: (r: StatusResponse) => encodeMessage([{ no: 1, kind: 'string', value: r.version }, { no: 2, kind: 'string', value: r.healthz }, { no: 3, kind: 'string', value: r.keyId }]),
    decode: (b: Buffer): StatusResponse => {
      const m = decodeMessage(b);
      return { version: stringField(m, 1), healthz: stringField(m, 2), keyId: stringField(m, 3) };
    },
  },
  encryptRequest: {
    encode: (r: { plaintext: Buffer; uid: string }) => encodeMessage([{ no: 1, kind: 'bytes', value: r.plaintext }, { no: 2, kind: 'string', value: r.uid }]),
    decode: (b: Buffer) => {
      const m = decodeMessage(b);
      return { plaintext: Buffer.from(bytesField(m, 1)), uid: stringField(m, 2) };
    },
  },
  encryptResponse: {
    encode: (r: EncryptResponse) => encodeMessage([{ no: 1, kind: 'bytes', value: r.ciphertext }, { no: 2, kind: 'string', value: r.keyId }, { no: 3, kind: 'map', value: r.annotations }]),
    decode: (b: Buffer): EncryptResponse => {
      const m = decodeMessage(b);
      return { ciphertext: Buffer.from(bytesField(m, 1)), keyId: stringField(m, 2), annotations: mapField(m, 3) };
    },
  },
  decryptRequest: {
    encode: (r: DecryptRequest & { uid: string }) =>
      encodeMessage([{ no: 1, kind: 'bytes', value: r.ciphertext }, { no: 2, kind: 'string', value: r.uid }, { no: 3, kind: 'string', value: r.keyId }, { no: 4, kind: 'map', value: r.annotations }]),
    decode: (b: Buffer) => {
      const m = decodeMessage(b);
      return { ciphertext: Buffer.from(bytesField(m, 1)), uid: stringField(m, 2), keyId: stringField(m, 3), annotations: mapField(m, 4) };
    },
  },
  decryptResponse: {
    encode: (r: { plaintext: Buffer }) => encodeMessage([{ no: 1, kind: 'bytes', value: r.plaintext }]),
    decode: (b: Buffer) => Buffer.from(bytesField(decodeMessage(b), 1)),
  },
  empty: { encode: () => Buffer.alloc(0), decode: () => ({}) },
};

/** A gRPC failure as Go prints a status error, carrying its code name for the metrics' status label. */
function grpcError(e: grpc.ServiceError): TransformError {
  const code = GRPC_CODE_NAMES[e.code] ?? 'Unknown';
  return new TransformError(`rpc error: code = ${code} desc = ${e.details ?? e.message}`, code);
}

/** kube's NewGRPCService: a channel to `endpoint` (unix:///path), each call given `timeoutSeconds`. */
export class GrpcKmsService implements KmsService {
  private readonly client: grpc.Client;
  constructor(
    endpoint: string,
    private readonly timeoutSeconds: number,
  ) {
    this.client = new grpc.Client(endpoint, grpc.credentials.createInsecure());
  }

  private call<Req, Res>(method: string, req: Req, encode: (r: Req) => Buffer, decode: (b: Buffer) => Res): Promise<Res> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(`${SERVICE}/${method}`, encode, decode, req, new grpc.Metadata(), { deadline: Date.now() + this.timeoutSeconds * 1000 }, (err, res) => {
        if (err) reject(grpcError(err));
        else resolve(res as Res);
      });
    });
  }

  status(): Promise<StatusResponse> {
    return this.call('Status', {}, codec.empty.encode, codec.statusResponse.decode);
  }

  encrypt(uid: string, plaintext: Buffer): Promise<EncryptResponse> {
    return this.call('Encrypt', { plaintext, uid }, codec.encryptRequest.encode, codec.encryptResponse.decode);
  }

  decrypt(uid: string, req: DecryptRequest): Promise<Buffer> {
    return this.call('Decrypt', { ...req, uid }, codec.decryptRequest.encode, codec.decryptResponse.decode);
  }

  close(): void {
    this.client.close();
  }
}
