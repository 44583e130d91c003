#!/usr/bin/env bash
# A local high-availability topology on one machine (issue 19): a 3-member etcd cluster and
# 3 kubeshard replicas on it, each replica on its own port with its own data dir, sharing
# one CA, serving certificate, service-account key and token file, as replicas behind a load
# balancer do. docker-compose.yml describes the same topology with containers (and a TCP
# load balancer); test/local-cluster-compose.test.ts keeps the two in step.
#
#   scripts/local-cluster.sh up [DIR]      # build first (npm run build); prints the kubeconfigs
#   scripts/local-cluster.sh down [DIR]
#   scripts/local-cluster.sh status [DIR]
#
# DIR defaults to /tmp/kubeshard-cluster. Kubeconfigs: DIR/kubeconfig-1..3 (one per replica)
# and DIR/kubeconfig (all three as contexts replica-1..3). Ports (override with the
# environment): etcd clients ETCD_PORTS="22379 22479 22579" (peers one above each), replicas
# REPLICA_PORTS="7441 7442 7443".
set -euo pipefail
cmd=${1:-}
W=${2:-/tmp/kubeshard-cluster}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
read -r -a ETCD_PORTS <<<"${ETCD_PORTS:-22379 22479 22579}"
read -r -a REPLICA_PORTS <<<"${REPLICA_PORTS:-7441 7442 7443}"
C=$W/certs

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

etcd_servers() {
  local s='' p
  for p in "${ETCD_PORTS[@]}"; do s+="${s:+,}http://127.0.0.1:$p"; done
  echo "$s"
}

up() {
  [[ -f $ROOT/dist/src/main.js ]] || { echo "build first: npm run build" >&2; exit 1; }
  command -v etcd >/dev/null || { echo "etcd is missing (apt-get install etcd-server)" >&2; exit 1; }
  mkdir -p "$W/run" && chmod 700 "$W"
  "$ROOT/scripts/cluster-certs.sh" "$C" "https://127.0.0.1:${REPLICA_PORTS[0]}"
  local cluster='' i
  for i in 0 1 2; do cluster+="${cluster:+,}etcd-$((i + 1))=http://127.0.0.1:$((ETCD_PORTS[i] + 1))"; done
  for i in 0 1 2; do
    local n=$((i + 1)) p=${ETCD_PORTS[i]}
    alive "$W/run/etcd-$n.pid" && continue
    mkdir -p "$W/etcd-$n" && chmod 700 "$W/etcd-$n"
    etcd --name "etcd-$n" --data-dir "$W/etcd-$n" \
      --listen-client-urls "http://127.0.0.1:$p" --advertise-client-urls "http://127.0.0.1:$p" \
      --listen-peer-urls "http://127.0.0.1:$((p + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((p + 1))" \
      --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token kubeshard-local \
      >"$W/run/etcd-$n.log" 2>&1 </dev/null &
    echo $! >"$W/run/etcd-$n.pid"
  done
  for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:${ETCD_PORTS[0]}/health" 2>/dev/null | grep -q true && break; sleep 0.2; done
  local token
  token=$(cut -d, -f1 "$C/tokens.csv")
  for i in 0 1 2; do
    local n=$((i + 1)) port=${REPLICA_PORTS[i]}
    if ! alive "$W/run/replica-$n.pid"; then
      mkdir -p "$W/replica-$n" && chmod 700 "$W/replica-$n"
      # KUBESHARD_HOSTNAME: each replica names a host of its own, as containers do (its identity Lease)
      KUBESHARD_HOSTNAME="replica-$n" node "$ROOT/dist/src/main.js" \
        --storage-backend etcd3 --etcd-servers "$(etcd_servers)" \
        --bind-address 127.0.0.1 --secure-port "$port" --advertise-address "192.0.2.$n" \
        --data-dir "$W/replica-$n" --tls-cert-file "$C/server.crt" --tls-private-key-file "$C/server.key" \
        --token-auth-file "$C/tokens.csv" --authorization-mode RBAC \
        --service-account-issuer https://kubernetes.default.svc \
        --service-account-signing-key-file "$C/sa.key" --service-account-key-file "$C/sa.pub" \
        >"$W/run/replica-$n.log" 2>&1 </dev/null &
      echo $! >"$W/run/replica-$n.pid"
    fi
    cat >"$W/kubeconfig-$n" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: replica-$n, cluster: {server: "https://127.0.0.1:$port", certificate-authority-data: $(base64 -w0 "$C/ca.crt")}}]
users: [{name: admin, user: {token: $token}}]
contexts: [{name: replica-$n, context: {cluster: replica-$n, user: admin}}]
current-context: replica-$n
EOF
    chmod 600 "$W/kubeconfig-$n"
  done
  {
    echo 'apiVersion: v1'
    echo 'kind: Config'
    echo 'clusters:'
    for i in 0 1 2; do echo "- {name: replica-$((i + 1)), cluster: {server: \"https://127.0.0.1:${REPLICA_PORTS[i]}\", certificate-authority-data: $(base64 -w0 "$C/ca.crt")}}"; done
    echo "users: [{name: admin, user: {token: $token}}]"
    echo 'contexts:'
    for i in 0 1 2; do echo "- {name: replica-$((i + 1)), context: {cluster: replica-$((i + 1)), user: admin}}"; done
    echo 'current-context: replica-1'
  } >"$W/kubeconfig"
  chmod 600 "$W/kubeconfig"
  for i in 0 1 2; do
    local n=$((i + 1)) ok=
    for _ in $(seq 1 150); do
      curl -fsS --cacert "$C/ca.crt" -H "Authorization: Bearer $token" "https://127.0.0.1:${REPLICA_PORTS[i]}/readyz" 2>/dev/null | grep -q ok && { ok=1; break; }
      alive "$W/run/replica-$n.pid" || break
      sleep 0.2
    done
    [[ -n $ok ]] || { echo "replica $n did not become ready; see $W/run/replica-$n.log" >&2; exit 1; }
  done
  echo "kubeconfig: $W/kubeconfig (contexts replica-1..3), $W/kubeconfig-{1,2,3}"
}

down() {
  local f
  for f in "$W"/run/replica-*.pid "$W"/run/etcd-*.pid; do
    [[ -f $f ]] || continue
    kill "$(cat "$f")" 2>/dev/null || true
  done
  for f in "$W"/run/replica-*.pid "$W"/run/etcd-*.pid; do
    [[ -f $f ]] || continue
    for _ in $(seq 1 50); do kill -0 "$(cat "$f")" 2>/dev/null || break; sleep 0.1; done
    rm -f "$f"
  done
}

status() {
  local f
  for f in "$W"/run/etcd-*.pid "$W"/run/replica-*.pid; do
    [[ -f $f ]] || continue
    if alive "$f"; then echo "$(basename "$f" .pid): running (pid $(cat "$f"))"; else echo "$(basename "$f" .pid): stopped"; fi
  done
}

case $cmd in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status [DIR]" >&2; exit 2 ;;
esac
