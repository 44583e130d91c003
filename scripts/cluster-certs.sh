#!/usr/bin/env bash
# The credentials that API server replicas share (scripts/local-cluster.sh, docker-compose.yml):
# a CA, a serving certificate for every name a client may reach a replica by, the
# service-account signing key, and a token file with an admin in system:masters; and a
# kubeconfig for SERVER (the load balancer's URL). Files are private to their user.
#
#   scripts/cluster-certs.sh DIR [SERVER]
set -euo pipefail
C=${1:?usage: cluster-certs.sh DIR [SERVER]}
SERVER=${2:-https://127.0.0.1:6443}
mkdir -p "$C" && chmod 700 "$C"
if [[ ! -f $C/ca.crt ]]; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$C/ca.key" -out "$C/ca.crt" -days 3650 -subj /CN=kubeshard-cluster-ca 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout "$C/server.key" -out "$C/server.csr" -subj /CN=kubeshard 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:lb,DNS:kubeshard-1,DNS:kubeshard-2,DNS:kubeshard-3,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' >"$C/server.ext"
  openssl x509 -req -in "$C/server.csr" -CA "$C/ca.crt" -CAkey "$C/ca.key" -CAcreateserial -days 3650 -extfile "$C/server.ext" -out "$C/server.crt" 2>/dev/null
  openssl genrsa -out "$C/sa.key" 2048 2>/dev/null && openssl rsa -in "$C/sa.key" -pubout -out "$C/sa.pub" 2>/dev/null
  echo "$(openssl rand -hex 32),admin,admin-uid,\"system:masters\"" >"$C/tokens.csv"
fi
cat >"$C/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: kubeshard, cluster: {server: "$SERVER", certificate-authority-data: $(base64 -w0 "$C/ca.crt")}}]
users: [{name: admin, user: {token: $(cut -d, -f1 "$C/tokens.csv")}}]
contexts: [{name: kubeshard, context: {cluster: kubeshard, user: admin}}]
current-context: kubeshard
KC
chmod 600 "$C"/*
