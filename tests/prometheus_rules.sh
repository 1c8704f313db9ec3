#!/usr/bin/env bash
# Checks docs/node.md's Prometheus blocks: the scrape configuration (after
# `<!-- ci: prometheus.yml -->`) and the alert rules (after `<!-- ci: dpagg-rules.yml -->`) pass
# `promtool check config` and `promtool check rules`; the rules fire as documented on synthetic
# series (`promtool test rules`); and every metric they name is one a real node serves (a node
# started here, scraped after one publish). Needs promtool (Debian's `prometheus` package) and a
# release build of dpagg-node.
set -euo pipefail
cd "$(dirname "$0")/.."
page=docs/node.md
work="$(mktemp -d)"
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
extract() {
  awk -v m="<!-- ci: $1 -->" '$0 == m {f = 1; next} f && /^```yaml/ {b = 1; next} b && /^```/ {exit} b {print}' "$page"
}
extract prometheus.yml > "$work/prometheus.yml"
extract dpagg-rules.yml > "$work/dpagg-rules.yml"
for f in prometheus.yml dpagg-rules.yml; do
  [ -s "$work/$f" ] || { echo "prometheus_rules.sh: the $f block of $page is missing" >&2; exit 1; }
done
promtool check config "$work/prometheus.yml"
promtool check rules "$work/dpagg-rules.yml"

# The rules fire where the page says: a node at 10 % of its ε fires the budget alert, one at
# 50 % does not; 20 refusals a minute fire the refusal alert.
cat > "$work/test.yml" <<'YAML'
rule_files:
  - dpagg-rules.yml
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'dpagg_budget_epsilon{instance="a", state="total"}'
        values: '10x20'
      - series: 'dpagg_budget_epsilon{instance="a", state="remaining"}'
        values: '1x20'
      - series: 'dpagg_budget_epsilon{instance="b", state="total"}'
        values: '10x20'
      - series: 'dpagg_budget_epsilon{instance="b", state="remaining"}'
        values: '5x20'
      - series: 'dpagg_rpc_requests_total{instance="a", method="GetLearner", code="PermissionDenied"}'
        values: '0+20x20'
    alert_rule_test:
      - eval_time: 10m
        alertname: DpaggBudgetBelow20Percent
        exp_alerts:
          - exp_labels: {severity: warning, instance: a}
            exp_annotations:
              summary: "a has less than 20 % of its privacy budget (ε) left"
      - eval_time: 15m
        alertname: DpaggRefusalsPerMinute
        exp_alerts:
          - exp_labels: {severity: warning, instance: a}
            exp_annotations:
              summary: "a refuses more than 10 calls a minute (allow-lists, rate limits, budget)"
YAML
(cd "$work" && promtool test rules test.yml)

# Every metric the rules name is served by a node (after an RPC call and a publish).
dir="$work/node"
mkdir -p "$dir"
head -201 data/diabetes.csv > "$dir/a.csv"
cp data/diabetes.schema.toml "$dir/s.toml"
printf 'insecure = true\norganisation_id = "org-a"\ndata = "a.csv"\nschema = "s.toml"\nstate_dir = "state"\n[policy]\nepsilon_total = 5\ndelta_total = 1e-5\nmax_epsilon_per_release = 2\n' > "$dir/node.toml"
node=target/release/dpagg-node
"$node" publish --config "$dir/node.toml" --epsilon 1 > /dev/null 2>&1
"$node" serve --config "$dir/node.toml" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 > "$dir/serve.out" 2> "$dir/serve.err" &
pid=$!
for _ in $(seq 100); do grep -q "metrics on" "$dir/serve.out" 2>/dev/null && break; sleep 0.1; done
url="$(sed -n 's/^dpagg-node metrics on //p' "$dir/serve.out")"
"$node" health --addr "$(sed -n 's/^dpagg-node listening on //p' "$dir/serve.out")" > /dev/null 2>&1 || true
scrape="$(curl -sf "$url")"
missing=0
for name in $(grep -o 'dpagg_[a-z_]*' "$work/dpagg-rules.yml" | sort -u); do
  base="${name%_total}"
  grep -qE "^# TYPE $base " <<<"$scrape" || { echo "prometheus_rules.sh: the rules name $name, which the node does not serve" >&2; missing=1; }
done
[ "$missing" = 0 ] || exit 1
echo "prometheus_rules.sh: the scrape configuration and rules pass promtool, fire as documented, and name only served metrics"
