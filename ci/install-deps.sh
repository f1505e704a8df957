#!/usr/bin/env bash
# Installs the Debian packages attngate builds and tests with; idempotent and quiet when
# everything is already there (a fresh CI machine starts bare).
set -euo pipefail

packages=(
  build-essential cmake
  catch2                      # unit and e2e tests (Catch2 2.13)
  libbenchmark-dev            # timing engine
  libcurl4-openssl-dev        # HTTP baseline store
  libboost-json1.81-dev       # JSON reading and writing
  libboost-math1.81-dev       # distributions and p-values
  libcli11-dev                # argument parsing
  libfmt-dev                  # formatting (g++ 12 lacks <format>)
  libssl-dev                  # SHA-256 (libcrypto)
  python3-numpy               # independent numpy oracle in the e2e tests
  chromium chromium-driver    # the browser test opens the HTML report headless
  python3-selenium            # ... and drives it
  apache2-bin                 # the HTTP store tests start their own WebDAV server (mod_dav_fs); no service
  python3-yaml                # the CI templates' test parses them
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
