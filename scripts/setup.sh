#!/usr/bin/env bash
# scripts/setup.sh — one command from a fresh Debian machine to a result.
#
#   bash scripts/setup.sh demo   install missing packages, build, train the Fashion-MNIST MLP,
#                                then simulate its step on a 512-core TPU v2 pod
#                                on a 2x2 mesh (batch over rows, hidden over cols)
#   bash scripts/setup.sh test   install missing packages, build, run the whole test suite
#                                (the Python module's pytest suite, then CTest)
#   bash scripts/setup.sh build  install missing packages and build only
#
# Run as root (or with sudo available). Only Debian packages are installed,
# and only those that are missing. BUILD_DIR (default: build) picks the build
# tree; extra CMake options can be passed in CMAKE_ARGS.
set -euo pipefail

mode=${1:-}
case "$mode" in
  demo|test|build) ;;
  *) echo "usage: bash scripts/setup.sh demo|test|build" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."

packages=(
  cmake g++ make pkg-config
  libopenblas-dev libdnnl-dev
  libboost-dev libboost-fiber-dev libboost-context-dev
  libhdf5-dev zlib1g-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  dataset-fashion-mnist fortunes
  libsword-dev sword-text-web sword-text-sparv libsentencepiece-dev
  pybind11-dev python3-dev python3-numpy
)
# The checkpoint tests read files back with h5py; the multi-process tests
# also run under OpenMPI (the MPI transport is built when MPI is found), and
# across network namespaces (iproute2) where the machine allows them.
# The Python module's suite runs under pytest; mtf-bleu is checked against
# NLTK's BLEU, and the TensorBoard event files are read back with protobuf.
# The fuzz targets of the parsers (tests/fuzz/) are built by clang with
# its libFuzzer runtime (libclang-rt-dev) and OpenMP (libomp-dev); the Slurm
# test starts real Slurm daemons (slurm-wlm, munge) on this machine.
if [ "$mode" = test ]; then
  packages+=(python3-h5py libopenmpi-dev openmpi-bin procps bc python3-pytest iproute2
             python3-nltk python3-protobuf clang libclang-rt-dev libomp-dev slurm-wlm munge)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup.sh: need root to install: ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  echo "setup.sh: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

build=${BUILD_DIR:-build}
jobs=$(nproc)
# shellcheck disable=SC2086
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-}
cmake --build "$build" -j"$jobs"

case "$mode" in
  demo)
    "$build/examples/mnist" --mesh_shape "rows:2;cols:2" --layout "batch:rows;hidden:cols"
    "$build/tools/mtf-sim" --topology tpu-v2-512 --mesh_shape "batch:16;model:32" \
      --layout "batch:batch;hidden:model" --mode cost
    echo
    echo "setup.sh: multi-process runs over TCP: $build/tools/mtf-launch -n 4 -- $build/examples/mnist"
    if ! grep -q "^MTF_HAVE_MPI:INTERNAL=\(TRUE\|ON\|1\)$" "$build/CMakeCache.txt"; then
      echo "setup.sh: this build has no MPI transport (OpenMPI is not installed), so mpirun" \
        "cannot run it; 'bash scripts/setup.sh test' installs libopenmpi-dev and openmpi-bin" \
        "and rebuilds with it"
    fi
    ;;
  test)
    # Debian's interpreter: the one whose numpy and pybind11 the module is
    # built for. pytest first, so that the run ends with CTest's summary.
    status=0
    PYTHONPATH="$build/python" MTF_BUILD_DIR="$(cd "$build" && pwd)" \
      /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python || status=$?
    (cd "$build" && ctest --output-on-failure -j"$jobs") || status=$?
    exit "$status"
    ;;
  build) ;;
esac
