#!/usr/bin/env bash
# Builds the attngate-jax wheel offline, from a copy of this directory (pip builds in the
# source tree; the checkout stays clean):
#   kernels/jax/build-wheel.sh OUT_DIR [VERSION]
# prints the wheel's path. VERSION (the CMake target passes attngate's project version):
# fail unless the wheel has exactly that version. $PYTHON (default python3) needs pip,
# setuptools >= 61 and wheel, no index: Debian's python3-pip python3-setuptools
# python3-wheel (ci/install-deps.sh), or a venv that has them.
set -euo pipefail
out=${1:?usage: kernels/jax/build-wheel.sh OUT_DIR [VERSION]}
expected=${2:-}
python=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$(mktemp -d "${TMPDIR:-/tmp}/attngate-jax-wheel.XXXXXX")
trap 'rm -rf "$src"' EXIT
cp -r "$here/pyproject.toml" "$here/attngate_jax" "$src/"
find "$src" -name __pycache__ -prune -exec rm -rf {} +
version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$src/attngate_jax/__init__.py")
if [ -n "$expected" ] && [ "$version" != "$expected" ]; then
  echo "build-wheel: kernels/jax/attngate_jax/__init__.py: __version__ is \"$version\", attngate's project version" \
       "(CMakeLists.txt) is \"$expected\": make them equal" >&2
  exit 2
fi
rm -f "$out/attngate_jax-$version-"*.whl
"$python" -m pip wheel --no-deps --no-build-isolation --no-index --disable-pip-version-check -q -w "$out" "$src" >&2
wheel="$out/attngate_jax-$version-py3-none-any.whl"
[ -f "$wheel" ] || { echo "build-wheel: pip made no $wheel" >&2; exit 3; }
echo "$wheel"
