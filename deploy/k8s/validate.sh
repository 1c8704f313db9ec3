#!/usr/bin/env bash
# Validates the Kubernetes manifests in this folder without a cluster:
#   1. org-K.yaml are the current expansion of org.yaml.in;
#   2. every resource validates strictly (unknown fields are errors) against the Kubernetes
#      OpenAPI schemas bundled in the PyPI package kubernetes-validate (installed into a temporary
#      virtualenv; no schema is downloaded at run time). If pip cannot install it, this step
#      prints SKIPPED and only the YAML syntax is checked;
#   3. the node.toml, aggregator.toml and schema.toml in the ConfigMaps are accepted by the real
#      binaries: an org-1 node publishes with them and serves, and the aggregator runs against it.
# Usage: deploy/k8s/validate.sh [KUBERNETES_VERSION (default 1.30.0)]
set -euo pipefail
cd "$(dirname "$0")"
k8s_version="${1:-1.30.0}"
repo="$(cd ../.. && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/dpagg-k8s.XXXXXX")"
server_pid=""
cleanup() {
  [ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
manifests=(namespace.yaml node-config.yaml org-1.yaml org-2.yaml org-3.yaml aggregator.yaml)

echo "== k8s: org-K.yaml match org.yaml.in"
for k in 1 2 3; do
  { echo "# Generated from org.yaml.in (sed s/@ORG@/org-$k/g); edit the template, not this file."
    sed "s/@ORG@/org-$k/g" org.yaml.in; } | cmp -s - "org-$k.yaml" \
    || { echo "validate.sh: org-$k.yaml is stale; regenerate it from org.yaml.in (see its first line)" >&2; exit 1; }
done

echo "== k8s: schema validation (kubernetes-validate --strict, Kubernetes $k8s_version)"
python3 -m venv "$work/venv"
if "$work/venv/bin/pip" install -q --disable-pip-version-check "kubernetes-validate==1.37.0" >"$work/pip.log" 2>&1; then
  "$work/venv/bin/kubernetes-validate" --strict -k "$k8s_version" "${manifests[@]}"
  py="$work/venv/bin/python"
else
  echo "SKIPPED: kubernetes-validate could not be installed (no PyPI?): no schema validation"
  tail -n 3 "$work/pip.log"
  py=""
  if python3 -c 'import yaml' 2>/dev/null; then
    py=python3
    python3 -c 'import sys, yaml; [list(yaml.safe_load_all(open(f))) for f in sys.argv[1:]]' "${manifests[@]}"
    echo "YAML syntax of ${manifests[*]}: ok"
  fi
fi

echo "== k8s: the ConfigMaps' configuration files, with the real binaries"
if [ -z "$py" ] || ! "$py" -c 'import yaml' 2>/dev/null; then
  echo "SKIPPED: no PyYAML to read the ConfigMaps"
  exit 0
fi
"$py" - "$work" node-config.yaml aggregator.yaml <<'PY'
import os, sys, yaml
out = sys.argv[1]
for path in sys.argv[2:]:
    for doc in yaml.safe_load_all(open(path)):
        if doc and doc["kind"] == "ConfigMap":
            d = os.path.join(out, doc["metadata"]["name"])
            os.makedirs(d)
            for name, text in doc["data"].items():
                open(os.path.join(d, name), "w").write(text)
PY
cmp -s "$work/dpagg-node-config/schema.toml" "$work/dpagg-aggregator-config/schema.toml" \
  || { echo "validate.sh: the two ConfigMaps carry different schemas" >&2; exit 1; }
(cd "$repo" && cargo build --release -q -p dpagg-node -p dpagg-aggregator)   # no-op when up to date
node="$repo/target/release/dpagg-node"
"$repo/deploy/generate.py" --orgs 3 --out "$work/sim" >/dev/null
# The manifests' paths (/data, /state, /report) are container paths: flags point them here.
cfg="$work/dpagg-node-config"
fed="$work/sim/federation"   # what the Secrets hold (deploy/generate.py ran dpagg-node certs init)
# generate.py gives the keys to the containers' user (65532); a node refuses an identity folder
# another user could change, so the node run here, as this user, gets its own copy.
cp -r "$fed/org-1" "$work/org-1-identity"
"$node" publish --config "$cfg/node.toml" --organisation-id org-1 --data "$work/sim/shards/org-1.csv" \
  --schema "$cfg/schema.toml" --state-dir "$work/state" --identity "$work/org-1-identity" --epsilon 1 --delta 0 --lambda 0.01
"$node" serve --config "$cfg/node.toml" --organisation-id org-1 --data "$work/sim/shards/org-1.csv" \
  --schema "$cfg/schema.toml" --state-dir "$work/state" --identity "$work/org-1-identity" --listen 127.0.0.1:0 >"$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 50); do grep -q 'listening on' "$work/serve.log" && break; sleep 0.1; done
addr="$(sed -n 's/^dpagg-node listening on //p' "$work/serve.log")"
[ -n "$addr" ] || { cat "$work/serve.log" >&2; echo "validate.sh: the node did not start" >&2; exit 1; }
"$node" health --addr "$addr" --identity "$work/org-1-identity"   # the probe's command
"$repo/target/release/dpagg-aggregator" run --config "$work/dpagg-aggregator-config/aggregator.toml" \
  --data "$work/sim/shards/aggregator.csv" --schema "$work/dpagg-aggregator-config/schema.toml" --test-file "$work/sim/shards/test.csv" --out "$work/report" \
  --identity "$fed/aggregator" --signing-keys "$fed/public-keys" --node "https://$addr" >"$work/run.log"
grep -q '1 included, 0 excluded' "$work/run.log" || { cat "$work/run.log" >&2; exit 1; }
"$repo/target/release/dpagg-aggregator" verify "$work/report/report.json" --signing-keys "$fed/public-keys"
echo "k8s configuration accepted: org-1 published and served with node.toml over mutual TLS, the aggregator ran with aggregator.toml (1 included, signed report verified)"
