#!/usr/bin/env bash
# Build, test and benchmark the attention kernels on a GPU machine, in one call.
#   scripts/device_attention.sh [tests|bench|all]   (default all)
# Logs and JSON go to ${OUT:-build-device/out}; the short table prints last.
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
out=${OUT:-build-device/out}
mkdir -p "$out"
build=build-device
# CMake 3.25 does not know nvcc 13's C++20 flag; name it.
cmake -S . -B $build -G Ninja -DMXATTN_PYTHON=OFF -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 -DCMAKE_CUDA20_EXTENSION_COMPILE_OPTION=-std=c++20 \
  >"$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
targets="mxattn_gpu_tests"
[ "$what" != tests ] && targets="$targets mxattn"
ninja -C $build $targets >"$out/build.log" 2>&1 || { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
rc=0
if [ "$what" != bench ]; then
  $build/tests/mxattn_gpu_tests --gtest_filter='Attention*:Decode*:KvCache*' 2>&1 | tee "$out/attention_tests.log" \
    | grep -E "^\s+(mx|nv|e[0-9])|FAILED|PASSED|Failure|error" | tail -80
  rc=${PIPESTATUS[0]}
fi
if [ "$what" != tests ]; then
  $build/mxattn bench attention --json "$out/attention_mxattn.json" 2>&1 | tee "$out/bench_mxattn.log"
  PYTHONUNBUFFERED=1 python3 bench/attention_sdpa.py --json "$out/attention_sdpa.json" 2>&1 | tee "$out/bench_sdpa.log"
  python3 bench/attention_sdpa.py --table "$out/attention_mxattn.json" "$out/attention_sdpa.json" \
    --merge "$out/attention_h100.json" 2>&1 | tee "$out/table.txt"
fi
exit $rc
