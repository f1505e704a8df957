#!/usr/bin/env bash
# Installs the Debian packages attngate builds and tests with; idempotent and quiet when
# everything is already there (a fresh CI machine starts bare).
#
# ATTNGATE_DEPS names what to install, in groups (default: all):
#   runtime  the shared libraries a built attngate runs with (a CI job that only runs binaries)
#   build    compiling attngate and running its smoke gate (ci/smoke.sh: the first run)
#   python   python3-venv, for venvs made from hashed lock files (ci/jax-bump.sh)
#   test     everything else its own tests use (ci/test.sh), with the venvs below
#   venvs    only the venvs named by ATTNGATE_VENVS ("name=lock ..."), nothing from apt
# ATTNGATE_APT_CACHE: a directory apt keeps the downloaded packages in (a CI cache; relative
# paths are from the repository root).
set -euo pipefail
cd "$(dirname "$0")/.."

# ATTNGATE_VENVS: each "NAME=LOCK" is checked before anything is installed or removed: NAME is
# one plain directory name under .venv (letters, digits, '.', '_', '-'; not . or ..), since
# .venv/NAME is removed and made again, and LOCK is not empty.
read -r -a requested_venvs <<< "${ATTNGATE_VENVS:-}"  # split on blanks, no glob
for venv in "${requested_venvs[@]}"; do
  name=${venv%%=*}
  if [[ $venv != *=* || ! $name =~ ^[A-Za-z0-9._-]+$ || $name == . || $name == .. || -z ${venv#*=} ]]; then
    echo "install-deps: error: ATTNGATE_VENVS: \"$venv\" is not NAME=LOCK with a NAME of letters, digits, '.', '_' or '-' (not . or ..) and a LOCK" >&2
    exit 2
  fi
done

runtime_packages=(libcurl4 libboost-json1.81.0 libfmt9 libsleef3 libbenchmark1debian libssl3 libtomlplusplus3)
build_packages=(
  build-essential cmake
  ninja-build                 # the main job builds with Ninja (ci/smoke.sh)
  pkg-config                  # CMake finds SLEEF through it
  libbenchmark-dev            # timing engine
  libcurl4-openssl-dev        # HTTP baseline store
  libboost-json1.81-dev       # JSON reading and writing
  libboost-math1.81-dev       # distributions and p-values
  libcli11-dev                # argument parsing
  libfmt-dev                  # formatting (g++ 12 lacks <format>)
  libopenblas-pthread-dev     # the bench's sgemm ceiling (the kernels have their own microkernels)
  libsleef-dev                # vectorised exp and tanh in the kernels' softmax
  libssl-dev                  # SHA-256 (libcrypto)
  libtomlplusplus-dev         # attngate.toml
)
python_packages=(python3-venv python3-pip python3-setuptools python3-wheel)  # the pinned venvs (below); the attngate-jax wheel, offline (kernels/jax/build-wheel.sh)
test_packages=(
  clang-19 libclang-rt-19-dev  # the sanitizer build and its libFuzzer targets (fuzz/)
  catch2                      # unit and e2e tests (Catch2 2.13)
  python3-numpy               # independent numpy oracle in the e2e tests
  chromium chromium-driver    # the browser test opens the HTML report headless
  python3-selenium            # ... and drives it
  apache2-bin                 # the HTTP store tests start their own WebDAV server (mod_dav_fs); no service
  python3-yaml                # the CI templates' test parses them
  valgrind                    # --perf-metric instructions counts kernel calls under callgrind (and its client-request header)
  stress-ng                   # background load for the loaded gate-accuracy benchmark and the tests' load check
  python3-jsonschema          # every results file the e2e tests write is validated against docs/results.schema.json
  python3-xmlschema           # JUnit XML validated against the XSD that Jenkins and GitLab read
  debootstrap                 # the .deb is installed into a fresh Debian 12 chroot (tests/e2e/team_repo_test.py)
  libbenchmark-tools          # Google Benchmark's compare.py reads the --gbench export (its scipy: ci/tools.lock)
)

groups=" ${ATTNGATE_DEPS:-all} "
wants() { [[ $groups == *" $1 "* || $groups == *" all "* ]]; }

packages=()
wants runtime && packages+=("${runtime_packages[@]}")
wants build && packages+=("${build_packages[@]}")
wants python && packages+=("${python_packages[@]}")
wants test && packages+=("${build_packages[@]}" "${python_packages[@]}" "${test_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  options=()
  # A CI machine is thrown away after the job: dpkg need not fsync every file it unpacks
  # (Debian's own docker images set the same), which on a busy disk is most of the install.
  if [ -n "${CI:-}" ]; then options+=(-o "Dpkg::Options::=--force-unsafe-io"); fi
  if [ -n "${ATTNGATE_APT_CACHE:-}" ]; then
    mkdir -p "$ATTNGATE_APT_CACHE/partial"
    options+=(-o "Dir::Cache::Archives=$(cd "$ATTNGATE_APT_CACHE" && pwd)/")
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${options[@]}" "${missing[@]}" >/dev/null
fi

# The pinned venvs, each made from a lock file with every file hashed: the JAX adapter's two
# (kernels/jax/requirements-{new,old}.lock: .venv/jax-new and .venv/jax-old), those
# ATTNGATE_VENVS names (ci/jax-bump.sh), and the test tools (ci/tools.lock: .venv/tools). A
# venv whose stored lock hash matches its lock file, made with the same Python version, is
# left alone; otherwise it is rebuilt from scratch, so a half-finished or stale venv never
# survives. ATTNGATE_SKIP_JAX=1 skips the JAX two (C++-only machines).
# ATTNGATE_JAX_PYTHON names another interpreter for the JAX venvs (Python >= 3.12 for jax
# 0.11+, with locks made by `ATTNGATE_JAX_PYTHON=... kernels/jax/relock.sh`); the tools venv
# is always Debian's python3, the interpreter ci/tools.lock was resolved for.
jax_python=${ATTNGATE_JAX_PYTHON:-/usr/bin/python3}
python_version() { "$1" -c 'import sys; print(sys.version)'; }
# A venv keeps its lock's sha256 in .attngate-lock-sha256 (ci/jax-bump.sh and action.yml find
# venvs by it) and its X-nodeps.lock sibling's, if X.lock has one, in .attngate-nodeps-sha256;
# that second hash is compared only for a lock with a sibling (jax-bump's copies have none).
install_venv() {  # NAME LOCK PYTHON
  local name=$1 lock=$2 python=$3 dir=".venv/$1"
  local nodeps=${lock%.lock}-nodeps.lock want want_nodeps=""
  [ -f "$nodeps" ] || nodeps=
  want=$(sha256sum "$lock" | cut -d' ' -f1)
  [ -z "$nodeps" ] || want_nodeps=$(sha256sum "$nodeps" | cut -d' ' -f1)
  if [ -x "$dir/bin/python" ] && [ "$(cat "$dir/.attngate-lock-sha256" 2>/dev/null)" = "$want" ] &&
     { [ -z "$nodeps" ] || [ "$(cat "$dir/.attngate-nodeps-sha256" 2>/dev/null)" = "$want_nodeps" ]; } &&
     [ "$(python_version "$dir/bin/python")" = "$(python_version "$python")" ]; then
    return 0
  fi
  echo "install-deps: creating $dir from $lock with $python"
  rm -rf "$dir"
  "$python" -m venv "$dir"
  "$dir/bin/pip" install -q --disable-pip-version-check --no-cache-dir --require-hashes -r "$lock"
  if [ -n "$nodeps" ]; then  # packages whose own requirements are not wanted (tpu-inference: vLLM, torch)
    "$dir/bin/pip" install -q --disable-pip-version-check --no-cache-dir --require-hashes --no-deps -r "$nodeps"
  fi
  echo "$want_nodeps" > "$dir/.attngate-nodeps-sha256"
  echo "$want" > "$dir/.attngate-lock-sha256"
}

jax_venvs=("${requested_venvs[@]}")
if wants test && [ "${ATTNGATE_SKIP_JAX:-0}" != 1 ]; then
  jax_venvs+=(jax-new=kernels/jax/requirements-new.lock jax-old=kernels/jax/requirements-old.lock)
fi
if [ ${#jax_venvs[@]} -gt 0 ] && ! python_version "$jax_python" >/dev/null; then  # before any venv is removed
  echo "install-deps: error: ATTNGATE_JAX_PYTHON=$jax_python does not run" >&2
  exit 2
fi
for venv in "${jax_venvs[@]}"; do
  install_venv "${venv%%=*}" "${venv#*=}" "$jax_python"
done
# The test-only tools: the CI templates' linters, scipy for compare.py.
if wants test; then install_venv tools ci/tools.lock /usr/bin/python3; fi
