#!/usr/bin/env bash
# Checks that every relative link in the Markdown pages (README.md, ARCHITECTURE.md,
# EXPERIMENTS.md, docs/**/*.md, data/README.md, deploy/README.md) points to a file or folder
# that exists, and that a `#fragment` names a heading of its target page (GitHub's slugs:
# lower case, punctuation dropped, spaces to hyphens). Links to http(s) and mailto are not
# followed. Prints every broken link and exits 1 if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - <<'PY'
import pathlib, re, sys

pages = [pathlib.Path(p) for p in ("README.md", "ARCHITECTURE.md", "EXPERIMENTS.md",
                                   "data/README.md", "deploy/README.md")]
pages += sorted(pathlib.Path("docs").rglob("*.md"))
link = re.compile(r"\]\(([^)\s]+)\)")

def slugs(page):
    out, seen, fenced = set(), {}, False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out

broken = []
for page in pages:
    if not page.exists():
        continue
    fenced = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        for target in link.findall(line):
            if re.match(r"(https?|mailto):", target):
                continue
            path, _, fragment = target.partition("#")
            dest = (page.parent / path) if path else page
            if not dest.exists():
                broken.append(f"{page}:{number}: {target}: no such file")
            elif fragment and dest.is_file() and dest.suffix == ".md" and fragment not in slugs(dest):
                broken.append(f"{page}:{number}: {target}: no heading #{fragment} in {dest}")
for b in broken:
    print(b)
if broken:
    sys.exit(f"doc_links.sh: {len(broken)} broken link(s)")
print(f"doc_links.sh: every relative link of {len(pages)} pages resolves")
PY
