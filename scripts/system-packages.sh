#!/usr/bin/env bash
# The one list of system packages the test suites and the sandbox need (Debian package names),
# and the commands each run expects on PATH. `npm test` runs this first (package.json's
# `pretest`) and `.ci/run` calls it too:
#   as root:      installs what is missing with apt-get and prints what it installed;
#   not as root:  stops before any test with the exact apt-get line to run.
# A missing client is a failure, never a skip: the suites test protocols with their real clients.
#
#   scripts/system-packages.sh            check, install what is missing (root), verify commands
#   scripts/system-packages.sh --list     print the package names, one line
set -u -o pipefail

packages=(
  git                 # the built-in git host and its tests
  bubblewrap          # bwrap: every build, step, job and replica runs in it
  passt               # pasta: each sandbox's network namespace
  iproute2            # ip: namespaces in the network tests
  util-linux          # nsenter, setpriv, unshare
  buildah             # Dockerfile builds
  skopeo              # OCI registry tests
  oathtool            # TOTP tests
  chromium            # console tests (headless)
  wrk                 # benchmarks and the ingress load tests
  gettext             # msgfmt: PO exports
  nginx caddy         # the ingress differential suite and benchmark peers
  openssl curl strace
  postgresql-client   # psql: database plane tests
  python3-dotenv      # dotenv import compared with python-dotenv
  pebble              # ACME tests (pebble, pebble-challtestsrv)
  golang-go cargo     # the toolchains under /usr that builds and publish steps see (test/recipes.test.ts)
  docker.io           # dockerd 20.10 and its client: the Docker and Swarm runtimes' suites (test/support/engine-cluster.ts)
  busybox-static      # the static busybox the engine suites' images are made of
)
commands=(git bwrap buildah setpriv skopeo oathtool chromium wrk msgfmt nginx caddy openssl psql curl
  sha256sum npm cargo strace pebble pebble-challtestsrv pasta ip nsenter unshare go)
# By path, not by name: /usr/local/bin/docker on these machines is a newer client (28.x) that
# shadows Debian's 20.10 one on PATH, and the engine suites need Debian's daemon and client.
files=(/usr/sbin/dockerd /usr/bin/docker /bin/busybox)

if [ "${1:-}" = "--list" ]; then
  echo "${packages[*]}"
  exit 0
fi

missing=()
while read -r name status; do
  [ "$status" = "installed" ] || missing+=("$name")
done < <(
  for p in "${packages[@]}"; do
    s="$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)"
    echo "$p ${s:-absent}"
  done
)

if [ ${#missing[@]} -gt 0 ]; then
  line="apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "system packages: missing ${missing[*]}" >&2
    echo "the tests need them; as root, run:" >&2
    echo "  apt-get update && $line" >&2
    exit 1
  fi
  echo "system packages: installing ${missing[*]}"
  start=$(date +%s)
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive $line -qq >/dev/null; }; then
    echo "system packages: apt-get install failed; run it by hand to see why:" >&2
    echo "  apt-get update && $line" >&2
    exit 1
  fi
  echo "system packages: installed ${missing[*]} in $(( $(date +%s) - start )) s"
fi

failed=0
for c in "${commands[@]}"; do
  if ! command -v "$c" >/dev/null 2>&1; then
    echo "system packages: $c is not on PATH" >&2
    failed=1
  fi
done
for f in "${files[@]}"; do
  if [ ! -x "$f" ]; then
    echo "system packages: $f is missing (docker.io, busybox-static)" >&2
    failed=1
  fi
done
# cargo ≥ 1.68 (sparse registries) must come first on PATH (rustup's): Debian's cargo 1.65 serves
# the sandbox (builds, publish steps), not the registry tests.
cargo_minor="$(cargo --version 2>/dev/null | sed -n 's/^cargo 1\.\([0-9]*\).*/\1/p')"
if [ -n "$cargo_minor" ] && [ "$cargo_minor" -lt 68 ]; then
  echo "system packages: cargo on PATH is $(command -v cargo), version 1.$cargo_minor; the registry tests need ≥ 1.68 (rustup's, ahead of /usr/bin on PATH)" >&2
  failed=1
fi
exit $failed
