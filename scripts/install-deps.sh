#!/usr/bin/env bash
# Installs what qopt needs on Debian 12 (run as root). Cheap when everything
# is already there: apt is only called for missing packages.
set -euo pipefail
packages=(cmake ninja-build g++ clang-14 libclang-rt-14-dev llvm-14-dev llvm-14-tools libprotobuf-dev
  protobuf-compiler libonnx-dev libeigen3-dev libtbb-dev libgtest-dev
  libgmock-dev libbenchmark-dev python3-onnx python3-numpy python3-pybind11 python3-pytest python3-dev libonnx-testdata graphviz chromium libjemalloc-dev libsimde-dev)
# The torch.ao test models' generator (bench/gen_torchao_models.py) needs
# PyTorch; without its recommends (video codecs, GUI toolkits) it installs
# in a fraction of the time.
lean_packages=(python3-torch python3-torchvision)
is_missing() {
  ! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}
missing=()
for p in "${packages[@]}"; do
  is_missing "$p" && missing+=("$p")
done
lean=()
for p in "${lean_packages[@]}"; do
  is_missing "$p" && lean+=("$p")
done
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi
if [ ${#missing[@]} -gt 0 ] || [ ${#lean[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]} ${lean[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  [ ${#missing[@]} -eq 0 ] || apt-get install -y -qq "${missing[@]}" >/dev/null
  [ ${#lean[@]} -eq 0 ] || apt-get install -y -qq --no-install-recommends "${lean[@]}" >/dev/null
fi
