#!/usr/bin/env bash
# Build, test and benchmark the attention kernels on a GPU machine, in one call:
#   scripts/device_attention.sh [tests|bench|all]        (default all)
# MXATTN_PREBUILT=DIR uses DIR/mxattn_gpu_tests and DIR/mxattn instead of building (binaries built
# elsewhere for sm_90a). Logs and JSON go to ${OUT:-build-device/out}; the short table prints last.
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
out=${OUT:-build-device/out}
mkdir -p "$out"
if [ -n "${MXATTN_PREBUILT:-}" ]; then
  tests=$MXATTN_PREBUILT/mxattn_gpu_tests
  cli=$MXATTN_PREBUILT/mxattn
else
  build=${MXATTN_BUILD_DIR:-build-device}
  # CMake 3.25 does not know nvcc 13's C++20 flag; naming it works with every CMake.
  cmake -S . -B "$build" -G Ninja -DMXATTN_PYTHON=OFF -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 -DCMAKE_CUDA20_EXTENSION_COMPILE_OPTION=-std=c++20 \
    >"$out/cmake.log" 2>&1 || { tail -30 "$out/cmake.log"; exit 1; }
  targets="mxattn_gpu_tests"
  [ "$what" != tests ] && targets="$targets mxattn"
  ninja -C "$build" $targets >"$out/build.log" 2>&1 || { grep -B2 -A8 error "$out/build.log" | head -60; exit 1; }
  tests=$build/tests/mxattn_gpu_tests
  cli=$build/mxattn
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
rc=0
if [ "$what" != bench ]; then
  "$tests" --gtest_filter='AttentionPrefill*:DecodeAttention*' >"$out/attention_tests.log" 2>&1
  rc=$?
  grep -E "kernel:|\[  (PASSED|FAILED) |Failure" "$out/attention_tests.log" | cut -c1-140 | tail -90
fi
if [ "$what" != tests ]; then
  "$cli" bench attention --json "$out/attention_mxattn.json" >"$out/bench_mxattn.log" 2>&1 || { cat "$out/bench_mxattn.log"; exit 1; }
  PYTHONUNBUFFERED=1 python3 bench/attention_sdpa.py --json "$out/attention_sdpa.json" >"$out/bench_sdpa.log" 2>&1 ||
    tail -20 "$out/bench_sdpa.log"
  python3 bench/attention_sdpa.py --table "$out/attention_mxattn.json" "$out/attention_sdpa.json" \
    --merge "$out/attention_h100.json" 2>&1 | tee "$out/table.txt"
fi
exit $rc
