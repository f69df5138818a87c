#!/usr/bin/env bash
# Installs what qopt needs on Debian 12 (run as root). Cheap when everything
# is already there: apt is only called for missing packages.
set -euo pipefail
packages=(cmake ninja-build g++ clang-14 libclang-rt-14-dev llvm-14-dev llvm-14-tools libprotobuf-dev
  protobuf-compiler libonnx-dev libeigen3-dev libtbb-dev libgtest-dev
  libgmock-dev libbenchmark-dev python3-onnx python3-numpy python3-pybind11 python3-pytest python3-dev libonnx-testdata graphviz chromium libjemalloc-dev libsimde-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
