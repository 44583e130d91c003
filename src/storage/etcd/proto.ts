// The etcd v3 gRPC messages kubeshard uses (etcdserverpb and mvccpb), written from the field
// numbers of etcd's v3 API (api/etcdserverpb/rpc.proto, api/mvccpb/kv.proto) as a protobufjs
// descriptor: KV (Range, Put, DeleteRange, Txn, Compact), Watch, Lease (Grant, Revoke,
// KeepAlive) and Maintenance Status. Only the fields kubeshard reads or writes are listed;
// protobufjs skips unknown fields on decode, so newer servers' additions are harmless.
//
// Thread ownership: immutable after module load (one Root built once, shared by every client).
import protobuf from 'protobufjs';

const f = (type: string, id: number, rule?: 'repeated') => (rule ? { type, id, rule } : { type, id });

const descriptor = {
  nested: {
    mvccpb: {
      nested: {
        KeyValue: {
          fields: {
            key: f('bytes', 1),
            createRevision: f('int64', 2),
            modRevision: f('int64', 3),
            version: f('int64', 4),
            value: f('bytes', 5),
            lease: f('int64', 6),
          },
        },
        Event: {
          fields: { type: f('EventType', 1), kv: f('KeyValue', 2), prevKv: f('KeyValue', 3) },
          nested: { EventType: { values: { PUT: 0, DELETE: 1 } } },
        },
      },
    },
    etcdserverpb: {
      nested: {
        ResponseHeader: {
          fields: { clusterId: f('uint64', 1), memberId: f('uint64', 2), revision: f('int64', 3), raftTerm: f('uint64', 4) },
        },
        RangeRequest: {
          fields: {
            key: f('bytes', 1),
            rangeEnd: f('bytes', 2),
            limit: f('int64', 3),
            revision: f('int64', 4),
            sortOrder: f('int32', 5),
            sortTarget: f('int32', 6),
            serializable: f('bool', 7),
            keysOnly: f('bool', 8),
            countOnly: f('bool', 9),
          },
        },
        RangeResponse: {
          fields: { header: f('ResponseHeader', 1), kvs: f('mvccpb.KeyValue', 2, 'repeated'), more: f('bool', 3), count: f('int64', 4) },
        },
        PutRequest: {
          fields: { key: f('bytes', 1), value: f('bytes', 2), lease: f('int64', 3), prevKv: f('bool', 4), ignoreValue: f('bool', 5), ignoreLease: f('bool', 6) },
        },
        PutResponse: { fields: { header: f('ResponseHeader', 1), prevKv: f('mvccpb.KeyValue', 2) } },
        DeleteRangeRequest: { fields: { key: f('bytes', 1), rangeEnd: f('bytes', 2), prevKv: f('bool', 3) } },
        DeleteRangeResponse: {
          fields: { header: f('ResponseHeader', 1), deleted: f('int64', 2), prevKvs: f('mvccpb.KeyValue', 3, 'repeated') },
        },
        RequestOp: {
          oneofs: { request: { oneof: ['requestRange', 'requestPut', 'requestDeleteRange', 'requestTxn'] } },
          fields: {
            requestRange: f('RangeRequest', 1),
            requestPut: f('PutRequest', 2),
            requestDeleteRange: f('DeleteRangeRequest', 3),
            requestTxn: f('TxnRequest', 4),
          },
        },
        ResponseOp: {
          oneofs: { response: { oneof: ['responseRange', 'responsePut', 'responseDeleteRange', 'responseTxn'] } },
          fields: {
            responseRange: f('RangeResponse', 1),
            responsePut: f('PutResponse', 2),
            responseDeleteRange: f('DeleteRangeResponse', 3),
            responseTxn: f('TxnResponse', 4),
          },
        },
        Compare: {
          oneofs: { targetUnion: { oneof: ['version', 'createRevision', 'modRevision', 'value', 'lease'] } },
          fields: {
            // result: EQUAL 0, GREATER 1, LESS 2, NOT_EQUAL 3; target: VERSION 0, CREATE 1, MOD 2, VALUE 3, LEASE 4
            result: f('int32', 1),
            target: f('int32', 2),
            key: f('bytes', 3),
            version: f('int64', 4),
            createRevision: f('int64', 5),
            modRevision: f('int64', 6),
            value: f('bytes', 7),
            lease: f('int64', 8),
            rangeEnd: f('bytes', 64),
          },
        },
        TxnRequest: {
          fields: { compare: f('Compare', 1, 'repeated'), success: f('RequestOp', 2, 'repeated'), failure: f('RequestOp', 3, 'repeated') },
        },
        TxnResponse: {
          fields: { header: f('ResponseHeader', 1), succeeded: f('bool', 2), responses: f('ResponseOp', 3, 'repeated') },
        },
        CompactionRequest: { fields: { revision: f('int64', 1), physical: f('bool', 2) } },
        CompactionResponse: { fields: { header: f('ResponseHeader', 1) } },
        WatchRequest: {
          oneofs: { requestUnion: { oneof: ['createRequest', 'cancelRequest', 'progressRequest'] } },
          fields: {
            createRequest: f('WatchCreateRequest', 1),
            cancelRequest: f('WatchCancelRequest', 2),
            progressRequest: f('WatchProgressRequest', 3),
          },
        },
        WatchCreateRequest: {
          fields: {
            key: f('bytes', 1),
            rangeEnd: f('bytes', 2),
            startRevision: f('int64', 3),
            progressNotify: f('bool', 4),
            // NOPUT 0, NODELETE 1
            filters: f('int32', 5, 'repeated'),
            prevKv: f('bool', 6),
            watchId: f('int64', 7),
            fragment: f('bool', 8),
          },
        },
        WatchCancelRequest: { fields: { watchId: f('int64', 1) } },
        WatchProgressRequest: { fields: {} },
        WatchResponse: {
          fields: {
            header: f('ResponseHeader', 1),
            watchId: f('int64', 2),
            created: f('bool', 3),
            canceled: f('bool', 4),
            compactRevision: f('int64', 5),
            cancelReason: f('string', 6),
            fragment: f('bool', 7),
            events: f('mvccpb.Event', 11, 'repeated'),
          },
        },
        LeaseGrantRequest: { fields: { TTL: f('int64', 1), ID: f('int64', 2) } },
        LeaseGrantResponse: { fields: { header: f('ResponseHeader', 1), ID: f('int64', 2), TTL: f('int64', 3), error: f('string', 4) } },
        LeaseRevokeRequest: { fields: { ID: f('int64', 1) } },
        LeaseRevokeResponse: { fields: { header: f('ResponseHeader', 1) } },
        LeaseKeepAliveRequest: { fields: { ID: f('int64', 1) } },
        LeaseKeepAliveResponse: { fields: { header: f('ResponseHeader', 1), ID: f('int64', 2), TTL: f('int64', 3) } },
        StatusRequest: { fields: {} },
        StatusResponse: {
          fields: {
            header: f('ResponseHeader', 1),
            version: f('string', 2),
            dbSize: f('int64', 3),
            leader: f('uint64', 4),
            raftIndex: f('uint64', 5),
            raftTerm: f('uint64', 6),
            raftAppliedIndex: f('uint64', 7),
            errors: f('string', 8, 'repeated'),
            dbSizeInUse: f('int64', 9),
            isLearner: f('bool', 10),
          },
        },
      },
    },
  },
};

const root = protobuf.Root.fromJSON(descriptor as any);
root.resolveAll();

export const etcdpb = (name: string): protobuf.Type => root.lookupType(name.includes('.') ? name : `etcdserverpb.${name}`);

/** The gRPC method paths, service by service. */
export const METHODS = {
  range: '/etcdserverpb.KV/Range',
  put: '/etcdserverpb.KV/Put',
  deleteRange: '/etcdserverpb.KV/DeleteRange',
  txn: '/etcdserverpb.KV/Txn',
  compact: '/etcdserverpb.KV/Compact',
  watch: '/etcdserverpb.Watch/Watch',
  leaseGrant: '/etcdserverpb.Lease/LeaseGrant',
  leaseRevoke: '/etcdserverpb.Lease/LeaseRevoke',
  leaseKeepAlive: '/etcdserverpb.Lease/LeaseKeepAlive',
  status: '/etcdserverpb.Maintenance/Status',
} as const;
