#!/usr/bin/env bash
# Checks the gRPC contract from another language: compiles proto/dpagg/v1/node.proto with
# grpcio-tools (from PyPI, into a throw-away virtualenv, with `cryptography` for Ed25519), makes a
# development federation (`dpagg-node certs init`), starts a real dpagg-node that has published
# one learner, one data release (histograms) and one learner under an agreed map
# (`dpagg-aggregator map`), and serves mutual TLS, and runs client.py against
# it with a client certificate; the client verifies both signatures. Needs python3 and the release binaries (built here if
# missing).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
node_pid=""
cleanup() {
  [ -n "$node_pid" ] && kill "$node_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cargo build --release -q -p dpagg-node -p dpagg-aggregator --manifest-path "$root/Cargo.toml"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check grpcio==1.* grpcio-tools==1.* "cryptography>=42"
"$work/venv/bin/python" -m grpc_tools.protoc -I "$root/proto" --python_out="$work" \
  --grpc_python_out="$work" "$root/proto/dpagg/v1/node.proto"

node="$root/target/release/dpagg-node"
head -61 "$root/data/diabetes.csv" >"$work/org.csv"
"$node" certs init --out "$work/fed" --org py-org,py-client >/dev/null
common=(--organisation-id py-org --data "$work/org.csv" --schema "$root/data/diabetes.schema.toml"
  --state-dir "$work/state" --epsilon-total 5 --delta-total 1e-5 --identity "$work/fed/py-org")
"$node" publish "${common[@]}" --mechanism objective-perturbation --epsilon 1 >/dev/null
"$node" publish-data "${common[@]}" --kind histogram --epsilon 0.5 --option bins=4 >/dev/null
# The newest learner is trained under an agreed map (its spec carries the map's constants).
"$root/target/release/dpagg-aggregator" map --data "$work/org.csv" \
  --schema "$root/data/diabetes.schema.toml" --map "$work/map.toml" --in-the-clear >/dev/null
"$node" publish "${common[@]}" --mechanism objective-perturbation --epsilon 1 \
  --map "$work/map.toml" >/dev/null
"$node" serve "${common[@]}" --listen 127.0.0.1:0 >"$work/out" 2>"$work/log" &
node_pid=$!
for _ in $(seq 100); do
  grep -q "listening on" "$work/out" 2>/dev/null && break
  sleep 0.1
done
addr="$(sed -n 's/^dpagg-node listening on //p' "$work/out")"
[ -n "$addr" ] || { echo "dpagg-node did not start" >&2; cat "$work/log" >&2; exit 1; }
PYTHONPATH="$work" "$work/venv/bin/python" "$root/tests/python/client.py" "$addr" \
  --identity "$work/fed/py-client" --signing-key "$work/fed/public-keys/py-org.pub" \
  --max-epsilon 2 --max-delta 1e-5
