#!/usr/bin/env bash
# End-to-end smoke test of the docker-compose simulation, on a machine with a Docker engine and
# nothing else (no registry, no images):
#   1. builds the release binaries (cargo) and the two images offline (deploy/build-images.sh),
#      and checks that the aggregator image is the production build (no `experiment`: no lab);
#   2. generates 3 organisations (deploy/generate.py) and checks that deploy/docker-compose.yml is
#      the generator's current output;
#   3. `up -d`: publishers, nodes (healthy via the gRPC health service over mutual TLS), then the
#      aggregator, which runs once and writes report.json into the mounted report folder; checks
#      the report (every node's certificate identity and signature) and verifies it offline with
#      `dpagg-aggregator verify`;
#   4. restarts org-1 and checks that its ledger (release id, spent ε) survived;
#   5. stops org-2, runs the aggregator again and checks that org-2 is excluded and the others are
#      included with the same releases as before;
#   6. `down -v` and removal of the temporary folder, whatever happened.
# Exit status 0 only if every check passed. Options via environment: SMOKE_ORGS (default 3),
# SMOKE_KEEP=1 (leave the project up for inspection; tear down with the printed command).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
orgs="${SMOKE_ORGS:-3}"
project="dpagg-smoke-$$"

say() { printf '== [%3ds] %s\n' "$((SECONDS - started))" "$*"; }
die() { printf 'smoke.sh: FAIL: %s\n' "$*" >&2; exit 1; }

command -v docker >/dev/null || die "docker is not installed"
docker info >/dev/null 2>&1 || die "no Docker engine (docker info failed)"
command -v python3 >/dev/null || die "python3 is not installed"
[ "$orgs" -ge 2 ] || die "SMOKE_ORGS must be at least 2 (one node is stopped)"
if docker compose version >/dev/null 2>&1; then
  compose_cmd=(docker compose)
elif command -v docker-compose >/dev/null; then
  compose_cmd=(docker-compose)
else
  die "neither 'docker compose' nor 'docker-compose' is installed"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/dpagg-smoke.XXXXXX")"
sim="$work/sim"
compose() { "${compose_cmd[@]}" -p "$project" -f "$sim/docker-compose.yml" "$@"; }

cleanup() {
  local rc=$?
  set +e
  if [ -f "$sim/docker-compose.yml" ]; then
    if [ "$rc" != 0 ]; then
      echo "---- container states and last log lines (for the failure above)" >&2
      compose ps -a >&2
      compose logs --no-color --tail 20 >&2
    fi
    if [ "${SMOKE_KEEP:-0}" = 1 ]; then
      echo "SMOKE_KEEP=1: left up; tear down with: ${compose_cmd[*]} -p $project -f $sim/docker-compose.yml down -v && rm -rf $work"
      exit "$rc"
    fi
    say "tear down: down -v"
    timeout 120 "${compose_cmd[@]}" -p "$project" -f "$sim/docker-compose.yml" down -v --remove-orphans -t 5 >/dev/null 2>&1 \
      || echo "smoke.sh: warning: 'down -v' of project $project failed" >&2
  fi
  rm -rf "$work"
  if [ "$rc" = 0 ]; then
    say "PASS: deploy/smoke.sh (${orgs} organisations) in $((SECONDS - started)) s"
  else
    echo "smoke.sh: FAILED after $((SECONDS - started)) s (exit $rc)" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "images (offline): deploy/build-images.sh"
deploy/build-images.sh
if docker run --rm dpagg-aggregator:latest experiment --help >/dev/null 2>&1; then
  die "the dpagg-aggregator image runs \`experiment\`: it must hold the production build, without the lab"
fi

say "generate $orgs organisations into $sim"
deploy/generate.py --orgs "$orgs" --dataset diabetes --epsilon 1 --seed 1 --out "$sim"
if [ "$orgs" = 3 ]; then
  cmp -s "$sim/docker-compose.yml" deploy/docker-compose.yml \
    || die "deploy/docker-compose.yml is not deploy/generate.py's output: run deploy/generate.py --out deploy"
fi

say "up -d (project $project, ${compose_cmd[*]})"
timeout 300 "${compose_cmd[@]}" -p "$project" -f "$sim/docker-compose.yml" up -d \
  || die "'up -d' failed or took over 300 s"

aggregator_id="$(compose ps -a -q aggregator)"
[ -n "$aggregator_id" ] || die "no aggregator container"
say "waiting for the aggregator to finish"
code="$(timeout 180 docker wait "$aggregator_id")" || die "the aggregator did not finish within 180 s"
compose logs --no-color aggregator | sed 's/^/   | /'
[ "$code" = 0 ] || die "the aggregator exited with status $code"
[ -s "$sim/report/report.json" ] || die "no report at $sim/report/report.json"

# check_report FILE EXCLUDED_NODE(or -) [REFERENCE_REPORT]
check_report() {
  python3 - "$orgs" "$@" <<'PY'
import json, sys
orgs, path, excluded_node = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ref = json.load(open(sys.argv[4])) if len(sys.argv) > 4 else None
r = json.load(open(path))
errors = []
def check(cond, msg):
    if not cond:
        errors.append(msg)
want_excluded = 0 if excluded_node == "-" else 1
check(r["included"] == orgs - want_excluded, f"included = {r['included']}, expected {orgs - want_excluded}")
check(r["excluded"] == want_excluded, f"excluded = {r['excluded']}, expected {want_excluded}")
check(len(r["nodes"]) == orgs, f"{len(r['nodes'])} nodes in the report, expected {orgs}")
for key in ("local_baseline_accuracy", "mirror_averaged_accuracy", "uniform_average_accuracy", "best_single_accuracy"):
    v = r.get(key)
    check(isinstance(v, (int, float)) and 0 <= v <= 1, f"{key} = {v!r} is not an accuracy")
before = {n["endpoint"]: n for n in ref["nodes"]} if ref else {}
for n in r["nodes"]:
    host = n["endpoint"].split("//")[1].split(":")[0]
    if host == excluded_node:
        check(n["status"] == "excluded", f"{host}: status {n['status']}, expected excluded")
        code = (n.get("exclusion") or {}).get("code")
        check(code in ("unreachable", "timeout"), f"{host}: exclusion code {code!r}, expected unreachable/timeout")
    else:
        check(n["status"] == "included", f"{host}: status {n['status']} ({n.get('exclusion')})")
        check(n["organisation_id"] == host, f"{host}: organisation_id {n['organisation_id']!r}")
        check(isinstance(n["accuracy"], (int, float)) and 0 <= n["accuracy"] <= 1, f"{host}: accuracy {n['accuracy']!r}")
        check(n["epsilon"] == 1.0, f"{host}: ε = {n['epsilon']}")
        check(n.get("certificate_identity") == host, f"{host}: certificate identity {n.get('certificate_identity')!r} (TLS off?)")
        check((n.get("signature") or {}).get("organisation_id") == host, f"{host}: signature {n.get('signature')!r}")
        if n["endpoint"] in before:
            check(n["release_id"] == before[n["endpoint"]]["release_id"],
                  f"{host}: release {n['release_id']} differs from the first run's {before[n['endpoint']]['release_id']}")
for e in errors:
    print(f"   report check failed: {e}", file=sys.stderr)
if errors:
    sys.exit(1)
print(f"   {path}: {r['included']} included, {r['excluded']} excluded"
      + (f" ({excluded_node}: {[n['exclusion']['code'] for n in r['nodes'] if n['status'] == 'excluded'][0]})" if want_excluded else "")
      + f"; local baseline {r['local_baseline_accuracy']:.3f}, mirror averaging {r['mirror_averaged_accuracy']:.3f}")
PY
}
say "checking the report: all $orgs nodes included over mutual TLS, signed, accuracies present"
check_report "$sim/report/report.json" - || die "report check failed"
say "verifying the report offline (dpagg-aggregator verify)"
target/release/dpagg-aggregator verify "$sim/report/report.json" --signing-keys "$sim/federation/public-keys" \
  | sed 's/^/   | /' || die "the report does not verify"

ledger() { compose exec -T org-1 /dpagg-node ledger; }
wait_healthy() {
  local id status deadline=$((SECONDS + 60))
  id="$(compose ps -q "$1")"
  while :; do
    status="$(docker inspect -f '{{.State.Health.Status}}' "$id" 2>/dev/null || echo gone)"
    [ "$status" = healthy ] && return 0
    [ "$SECONDS" -lt "$deadline" ] || die "$1 not healthy 60 s after restart (status: $status)"
    sleep 1
  done
}
say "ledger of org-1 survives 'restart org-1'"
before="$(ledger)" || die "cannot read org-1's ledger"
echo "$before" | sed 's/^/   | /'
grep -q '^1 release(s):' <<<"$before" || die "org-1's ledger should hold exactly one release"
timeout 120 "${compose_cmd[@]}" -p "$project" -f "$sim/docker-compose.yml" restart org-1 >/dev/null 2>&1 \
  || die "'restart org-1' failed"
wait_healthy org-1
after="$(ledger)" || die "cannot read org-1's ledger after the restart"
[ "$before" = "$after" ] || { printf 'after the restart:\n%s\n' "$after" >&2; die "org-1's ledger changed across the restart"; }
echo "   same release and spent ε after the restart"

say "stop org-2 and run the aggregator again"
timeout 60 "${compose_cmd[@]}" -p "$project" -f "$sim/docker-compose.yml" stop org-2 >/dev/null 2>&1 || die "'stop org-2' failed"
if ! timeout 180 "${compose_cmd[@]}" -p "$project" -f "$sim/docker-compose.yml" run --rm --no-deps \
  -e DPAGG_AGG_OUT=/report/after-stop aggregator 2>/dev/null | sed 's/^/   | /'; then
  die "the second aggregator run failed"
fi
say "checking the second report: org-2 excluded, the others included with the same releases"
check_report "$sim/report/after-stop/report.json" org-2 "$sim/report/report.json" || die "second report check failed"
