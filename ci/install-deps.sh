#!/usr/bin/env bash
# Installs the Debian packages attngate builds and tests with; idempotent and quiet when
# everything is already there (a fresh CI machine starts bare).
set -euo pipefail

packages=(
  build-essential cmake
  clang-19 libclang-rt-19-dev  # the sanitizer build and its libFuzzer targets (fuzz/)
  catch2                      # unit and e2e tests (Catch2 2.13)
  libbenchmark-dev            # timing engine
  libcurl4-openssl-dev        # HTTP baseline store
  libboost-json1.81-dev       # JSON reading and writing
  libboost-math1.81-dev       # distributions and p-values
  libcli11-dev                # argument parsing
  libfmt-dev                  # formatting (g++ 12 lacks <format>)
  libopenblas-pthread-dev     # the bench's sgemm ceiling (the kernels have their own microkernels)
  libsleef-dev                # vectorised exp and tanh in the kernels' softmax
  libssl-dev                  # SHA-256 (libcrypto)
  python3-numpy               # independent numpy oracle in the e2e tests
  python3-venv                # the JAX adapter's pinned venvs (below)
  chromium chromium-driver    # the browser test opens the HTML report headless
  python3-selenium            # ... and drives it
  apache2-bin                 # the HTTP store tests start their own WebDAV server (mod_dav_fs); no service
  python3-yaml                # the CI templates' test parses them
  valgrind                    # --perf-metric instructions counts kernel calls under callgrind (and its client-request header)
  stress-ng                   # background load for the loaded gate-accuracy benchmark and the tests' load check
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The JAX adapter's two pinned environments (kernels/jax/requirements-{new,old}.lock, every
# file hashed): .venv/jax-new and .venv/jax-old. A venv whose stored lock hash matches
# its lock file is left alone; otherwise it is rebuilt from scratch, so a half-finished
# or stale venv never survives. ATTNGATE_SKIP_JAX=1 skips them (C++-only machines).
# ATTNGATE_JAX_PYTHON names another interpreter to make them with (Python >= 3.12 for jax
# 0.11+, with locks made by `ATTNGATE_JAX_PYTHON=... kernels/jax/relock.sh`); a venv made
# with another Python version is rebuilt.
jax_python=${ATTNGATE_JAX_PYTHON:-/usr/bin/python3}
python_version() { "$1" -c 'import sys; print(sys.version)'; }
install_jax_venv() {
  local name=$1 lock=$2 dir=".venv/$1"
  local want
  want=$(sha256sum "$lock" | cut -d' ' -f1)
  if [ -x "$dir/bin/python" ] && [ "$(cat "$dir/.attngate-lock-sha256" 2>/dev/null)" = "$want" ] &&
     [ "$(python_version "$dir/bin/python")" = "$(python_version "$jax_python")" ]; then
    return 0
  fi
  echo "install-deps: creating $dir from $lock with $jax_python"
  rm -rf "$dir"
  "$jax_python" -m venv "$dir"
  "$dir/bin/pip" install -q --disable-pip-version-check --no-cache-dir --require-hashes -r "$lock"
  echo "$want" > "$dir/.attngate-lock-sha256"
}

if [ "${ATTNGATE_SKIP_JAX:-0}" != 1 ]; then
  cd "$(dirname "$0")/.."
  if ! python_version "$jax_python" >/dev/null; then  # before any venv is removed
    echo "install-deps: error: ATTNGATE_JAX_PYTHON=$jax_python does not run" >&2
    exit 2
  fi
  install_jax_venv jax-new kernels/jax/requirements-new.lock
  install_jax_venv jax-old kernels/jax/requirements-old.lock
fi
