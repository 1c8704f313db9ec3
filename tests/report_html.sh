#!/usr/bin/env bash
# report.html in a real browser: the quick start's demo writes a report, headless Chromium loads
# it, and the page must load with no error (console or resource) and every figure present —
# each <img> loaded with a size, each inline SVG chart laid out with its bars. A copy of the page
# with a missing image and a console error must fail the same check, so the check can fail.
# Needs `chromium` (Debian's package; .ci/run installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
target/release/dpagg-aggregator demo --out "$work/demo" > "$work/demo.log" 2>&1 \
  || { cat "$work/demo.log"; echo "report_html.sh: demo failed" >&2; exit 1; }

# The probe, injected first in <head>: it records every error event (scripts and resources,
# caught in the capture phase) and console.error call, then, once the page has loaded, what
# each figure looks like, as JSON in a <pre id="dpagg-check"> that --dump-dom prints.
probe='<script>
window.__errors = [];
window.addEventListener("error", e => window.__errors.push(e.message || ("failed to load " + (e.target.src || e.target.href))), true);
const __error = console.error;
console.error = (...a) => { window.__errors.push(a.join(" ")); __error(...a); };
window.addEventListener("load", () => {
  const images = [...document.images].map(i => ({src: i.getAttribute("src"), ok: i.complete && i.naturalWidth > 0}));
  const charts = [...document.querySelectorAll("svg")].map(s => ({
    label: s.getAttribute("aria-label"), width: s.getBoundingClientRect().width, bars: s.querySelectorAll("rect").length}));
  const out = document.createElement("pre");
  out.id = "dpagg-check";
  out.textContent = JSON.stringify({errors: window.__errors, images, charts});
  document.body.appendChild(out);
});
</script>'

# Loads page $1 (with the probe) and prints the probe's JSON.
probe_page() {
  python3 - "$1" "$2" "$probe" <<'PY'
import sys
page, out, probe = sys.argv[1:4]
html = open(page, encoding="utf-8").read()
if "<head>" not in html:
    sys.exit(f"{page}: no <head>")
open(out, "w", encoding="utf-8").write(html.replace("<head>", "<head>" + probe, 1))
PY
  timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --allow-file-access-from-files --virtual-time-budget=5000 --dump-dom "file://$2" 2>"$work/chromium.log" \
    | python3 -c 'import html, re, sys; m = re.search(r"<pre id=\"dpagg-check\">(.*?)</pre>", sys.stdin.read(), re.S); print(html.unescape(m.group(1)) if m else "")'
}

# Fails with what is wrong unless the probe saw no error, every image loaded and at least
# $2 charts laid out with bars.
judge() {
  python3 - "$1" "$2" <<'PY'
import json, sys
text, charts_needed = sys.argv[1], int(sys.argv[2])
if not text:
    sys.exit("the page did not finish loading (no probe output)")
r = json.loads(text)
problems = [f"error: {e}" for e in r["errors"]]
problems += [f"image not loaded: {i['src']}" for i in r["images"] if not i["ok"]]
problems += [f"chart {c['label']!r} has no size or no bars" for c in r["charts"] if c["width"] <= 0 or c["bars"] == 0]
if len(r["charts"]) < charts_needed:
    problems.append(f"{len(r['charts'])} chart(s), expected {charts_needed}")
if problems:
    sys.exit("; ".join(problems))
print(f"{len(r['charts'])} chart(s) laid out ({', '.join(c['label'] for c in r['charts'])}), {len(r['images'])} image(s) loaded, no error")
PY
}

result="$(probe_page "$work/demo/report.html" "$work/probed.html")"
judge "$result" 2 || { cat "$work/chromium.log" >&2; echo "report_html.sh: report.html fails in Chromium" >&2; exit 1; }

# The check can fail: a missing image and a console error are both caught.
sed 's|<h2>Nodes</h2>|<img src="missing.png" alt="missing"><script>console.error("planted")</script><h2>Nodes</h2>|' \
  "$work/demo/report.html" > "$work/broken.html"
broken="$(probe_page "$work/broken.html" "$work/probed-broken.html")"
if why="$(judge "$broken" 2 2>&1)"; then
  echo "report_html.sh: a page with a missing image and a console error passed the check" >&2
  exit 1
fi
grep -q "image not loaded: missing.png" <<<"$why" && grep -q "error: planted" <<<"$why" \
  || { echo "report_html.sh: the planted faults were not both named: $why" >&2; exit 1; }
echo "report.html loads in headless Chromium with every figure and no error; a planted fault is caught ($why)"
