#!/usr/bin/env bash
# Builds the `dpagg-node` and `dpagg-aggregator` images WITHOUT pulling anything.
#
# Why this exists: the canonical build (deploy/Dockerfile) starts from `rust:*` and distroless
# base images, which need a container registry. The machines that build and test dpagg have a
# Docker engine but no registry access and no images at all. So this script builds the release
# binaries on the host with cargo, then assembles a `FROM scratch` image per binary that holds
# exactly what the binary needs at run time:
#   - the stripped binary, as /dpagg-node or /dpagg-aggregator (the entrypoint); the aggregator is
#     the production build (`--no-default-features`: no lab, as deploy/Dockerfile builds it);
#   - the shared libraries `ldd` reports (glibc's libc and libm, libgcc_s, the dynamic loader),
#     copied to the paths the binary asks for;
#   - /etc/nsswitch.conf (`hosts: files dns`), so that getaddrinfo resolves service names such as
#     `org-1` through the /etc/hosts and /etc/resolv.conf that Docker mounts into every container
#     (Docker's embedded DNS on a compose network). glibc >= 2.34 has the `files` and `dns` NSS
#     modules inside libc.so.6; with an older host glibc, libnss_files, libnss_dns and libresolv
#     are copied too;
#   - /etc/passwd and /etc/group naming the unprivileged user 65532 (`dpagg`) the images run as,
#     a /tmp, and the data folders (/state for the node, /report for the aggregator) owned by it,
#     so that a fresh named volume mounted there is writable by the node.
# No system CA certificates: nodes and aggregator trust only the federation's CA, which comes with
# each identity folder (mutual TLS; plain http:// only with --insecure).
#
# Usage: deploy/build-images.sh [--tag TAG] [--no-cargo]
#   --tag TAG    image tag (default: latest) -> dpagg-node:TAG, dpagg-aggregator:TAG
#   --no-cargo   use the binaries already in target/release as they are (default: build the node
#                and the production aggregator first, then put the developer aggregator, with the
#                lab, back in target/release; both are no-ops when up to date)
set -euo pipefail
cd "$(dirname "$0")/.."

tag=latest
cargo_build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag="$2"; shift 2 ;;
    --no-cargo) cargo_build=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "build-images.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

stage="$(mktemp -d "${TMPDIR:-/tmp}/dpagg-images.XXXXXX")"
trap 'rm -rf "$stage"' EXIT

if [ "$cargo_build" = 1 ]; then
  # One selection for both (the node has no default features to drop): the aggregator then
  # shares the node's build of every crate below it, as the default build at the end does.
  echo "== cargo build --release -p dpagg-node -p dpagg-aggregator --no-default-features"
  cargo build --release -q -p dpagg-node -p dpagg-aggregator --no-default-features
fi
for bin in dpagg-node dpagg-aggregator; do
  [ -x "target/release/$bin" ] || { echo "build-images.sh: target/release/$bin is missing" >&2; exit 1; }
  cp "target/release/$bin" "$stage/$bin.bin"
done
if [ "$cargo_build" = 1 ]; then
  # The production aggregator is set aside above; the default build writes the same path.
  cargo build --release -q -p dpagg-node -p dpagg-aggregator
fi

glibc="$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')"
old_glibc=0
if [ -n "$glibc" ] && [ "$(printf '%s\n2.34\n' "$glibc" | sort -V | head -n1)" != "2.34" ]; then
  old_glibc=1
fi

# copy_lib SRC DEST_ROOT: the file behind SRC (symlinks followed) at the same path under DEST_ROOT.
copy_lib() {
  mkdir -p "$2$(dirname "$1")"
  cp -L "$1" "$2$1"
}

build_image() {
  local bin="$1" datadir="$2" cmd="$3" expose="${4:-}"
  local ctx="$stage/$bin" root="$stage/$bin/rootfs"
  mkdir -p "$root/etc" "$root/tmp" "$ctx/datadir"
  chmod 1777 "$root/tmp"
  strip -o "$root/$bin" "$stage/$bin.bin"
  # Libraries: every `name => /path` line, and the loader (a bare absolute path).
  ldd "$stage/$bin.bin" | awk '/=> \//{print $3} /^[[:space:]]*\//{print $1}' | sort -u \
    | while read -r lib; do copy_lib "$lib" "$root"; done
  if [ "$old_glibc" = 1 ]; then
    local libdir
    libdir="$(dirname "$(ldd "$stage/$bin.bin" | awk '/libc\.so/{print $3}')")"
    for lib in libnss_files.so.2 libnss_dns.so.2 libresolv.so.2; do
      [ -e "$libdir/$lib" ] && copy_lib "$libdir/$lib" "$root"
    done
  fi
  printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
  printf 'root:x:0:0:root:/:/sbin/nologin\ndpagg:x:65532:65532:dpagg:%s:/sbin/nologin\n' "$datadir" >"$root/etc/passwd"
  printf 'root:x:0:\ndpagg:x:65532:\n' >"$root/etc/group"
  cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
COPY --chown=65532:65532 datadir $datadir
USER 65532:65532
WORKDIR $datadir
$expose
ENTRYPOINT ["/$bin"]
CMD ["$cmd"]
LABEL org.opencontainers.image.title="$bin" \\
      org.opencontainers.image.description="dpagg $bin (offline FROM scratch build, deploy/build-images.sh)"
DOCKERFILE
  echo "== image $bin:$tag ($(du -sh "$root" | cut -f1) rootfs: $(cd "$root" && find . -type f | sed 's|^\.||' | sort | tr '\n' ' '))"
  # The classic builder: no BuildKit frontend image to pull, and FROM scratch needs nothing.
  if ! DOCKER_BUILDKIT=0 docker build -q -t "$bin:$tag" "$ctx" >"$ctx/build.log" 2>&1; then
    cat "$ctx/build.log" >&2
    echo "build-images.sh: docker build of $bin failed" >&2
    exit 1
  fi
}

build_image dpagg-node /state serve "EXPOSE 50051"
build_image dpagg-aggregator /report run
docker image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' | grep -E "^dpagg-(node|aggregator):$tag " || true
