# Shared by scripts/start, scripts/test and the bench's scripts: install what is missing, then build.
# Debian 12 packages only; apt runs only when something is missing.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

BUILD_PACKAGES=(cmake ninja-build g++ libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
                libssl-dev libcli11-dev libspdlog-dev libfmt-dev libgtest-dev)
TEST_PACKAGES=(chromium strace slowhttptest clang-14 libclang-rt-14-dev)

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

ensure_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "Installing Debian packages: ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

ensure_npm() {
  command -v node >/dev/null || { echo "Node.js 20 and npm are needed: apt-get install nodejs npm" >&2; exit 1; }
  if [ ! -d "$ROOT/node_modules" ] || [ "$ROOT/package-lock.json" -nt "$ROOT/node_modules/.package-lock.json" ]; then
    say "Installing npm packages"
    (cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

# @leuria/client's own build tools (esbuild, TypeScript): a small install, separate from the tests'.
ensure_node() {
  command -v node >/dev/null && command -v npm >/dev/null && return 0
  ensure_packages nodejs npm
}

ensure_sdk_npm() {
  ensure_node
  local dir="$ROOT/clients/js"
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    say "Installing @leuria/client's build tools"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  fi
}

build_sdk() {
  say "Building @leuria/client (clients/js/dist)"
  node "$ROOT/clients/js/build.mjs"
}

# build DIR [cmake args…]
# BUILD_TARGET=leuria builds only the engine (scripts/start), leaving the configuration as it is,
# so start and test can share build/.
build() {
  local dir=$1; shift
  say "Building $dir"
  cmake -S "$ROOT" -B "$ROOT/$dir" -G Ninja "$@" >/dev/null
  cmake --build "$ROOT/$dir" ${BUILD_TARGET:+--target "$BUILD_TARGET"}
}

# The bench's C programs (bench/{floors,clients,fakes}/*.c) into build-bench/{floors,clients,fakes}/, each
# rebuilt when its source, or what they share (bench/floors/floor.h, bench/clients/client.h), is newer.
build_bench_programs() {
  say "Building the C floors, clients and fakes (build-bench/floors, build-bench/clients, build-bench/fakes)"
  local kind src out
  for kind in floors clients fakes; do
    mkdir -p "$ROOT/build-bench/$kind"
    for src in "$ROOT"/bench/$kind/*.c; do
      out="$ROOT/build-bench/$kind/$(basename "$src" .c)"
      if [ ! "$out" -nt "$src" ] || [ ! "$out" -nt "$ROOT/bench/floors/floor.h" ] || [ ! "$out" -nt "$ROOT/bench/clients/client.h" ]; then
        gcc -O2 -Wall -Wextra -Werror -o "$out" "$src"
      fi
    done
  done
}
