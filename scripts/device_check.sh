#!/usr/bin/env bash
# Build, test and benchmark on a GPU machine, from the repository root:
#   scripts/device_check.sh            everything
#   MXATTN_GTEST_FILTER='GpuQuantize*' MXATTN_BENCHES='quantize' MXATTN_DEVICE_PYTHON=OFF MXATTN_DEMO=OFF scripts/device_check.sh
# Logs and JSON go to $OUT (or build-device/out). Ends with a short table.
# To add a suite: append to GPU_TEST_BINARIES (GoogleTest) or put test_*.py in tests/gpu (pytest, run
# with the module built here); a benchmark: to MXATTN_BENCHES (`mxattn bench NAME`). The README's code
# blocks run here with their GPU ones on (tests/python/test_readme.py, MXATTN_README_GPU=1).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/build-device/out}
BUILD=${MXATTN_BUILD_DIR:-$ROOT/build-device}
BENCHES=${MXATTN_BENCHES:-quantize attention}
PYTHON_MODULE=${MXATTN_DEVICE_PYTHON:-ON}
FILTER=${MXATTN_GTEST_FILTER:-*}
# compute-sanitizer (memcheck, racecheck) over these GPU tests: every kernel family, small shapes
# (under racecheck a test runs ~100x slower: the filter took 221-270 s on the H200, hence the 480 s limit).
# MXATTN_SANITIZER=OFF skips it.
SANITIZER_FILTER=${MXATTN_SANITIZER_FILTER:-'Fold.*:*HopperPrefill.StructuredIdentity/*:*HopperPrefill.NanBlocks/*:*HopperPrefill.ShapesAndMasks/*:*HopperPrefill.NoLse/*:*HopperPrefill.DenseQ/*:*HopperPrefill.Ue4m3Scales/*:*HopperPrefill.Varlen/*:*HopperPrefill.OutputLayouts/*:AttentionPrefill.OutputLayouts:AttentionPrefill.StructuredIdentity:AttentionPrefill.Varlen:DecodeAttention.RefusesMisalignedCache:DecodeAttention.NanBlocks:GpuQuantize.*:GpuDequantize.*:GpuScaleLayout.*:*GpuProbe.OneHotRunLightsOneRow/*:*GpuProbe.MeasuredMapIsTheLibrarys/mma_m16n8k16_bf16:*GpuProbe.ValuesAreTheModels/*:Sm120Fold.*:Sm120Emulation.*:BlockScaledPrefill.*'}
mkdir -p "$OUT"
SUMMARY=()
note() { SUMMARY+=("$1"); }

echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv 2>&1
nvcc --version | tail -1

# GoogleTest: the system's, else a copy carried in .deps/googletest, installed to /tmp.
CMAKE_EXTRA=()
if ! ls /usr/src/googletest/CMakeLists.txt /usr/lib/*/cmake/GTest/GTestConfig.cmake \
       /usr/local/lib*/cmake/GTest/GTestConfig.cmake >/dev/null 2>&1; then
  if [ -f .deps/googletest/CMakeLists.txt ]; then
    echo "== googletest from .deps"
    cmake -S .deps/googletest -B /tmp/gtest-build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_GMOCK=OFF \
      -DCMAKE_INSTALL_PREFIX=/tmp/gtest >/tmp/gtest_build.log 2>&1 &&
      cmake --build /tmp/gtest-build --target install >>/tmp/gtest_build.log 2>&1 ||
      { echo "googletest build failed:"; tail -20 /tmp/gtest_build.log; }
    CMAKE_EXTRA+=(-DCMAKE_PREFIX_PATH=/tmp/gtest)
  else
    echo "no GoogleTest found: the GPU tests will not build"
  fi
fi

# Python packages the machine lacks travel as wheels in .whl (carried; the cuDNN FP8 baseline's
# nvidia-cudnn-frontend, for one): installed to /tmp/site for this run.
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl &&
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} || echo "wheels from .whl did not install"
fi

echo "== configure + build ($BUILD)"
start=$(date +%s)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMXATTN_PYTHON="$PYTHON_MODULE" -DMXATTN_TESTS=ON \
  -DPython_EXECUTABLE="$(command -v python3)" "${CMAKE_EXTRA[@]}" >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; }
TARGETS=(mxattn_gpu_tests mxattn)
# (Not `ninja ... | grep -q`: with pipefail, grep's early exit can fail the pipeline through SIGPIPE.)
all_targets=$(ninja -C "$BUILD" -t targets all 2>/dev/null)
grep -q '^_mxattn:' <<<"$all_targets" && TARGETS+=(_mxattn)
# Keep going past a broken target so that what does build still runs.
cmake --build "$BUILD" --target "${TARGETS[@]}" -- -k 0 >>"$OUT/build.log" 2>&1
build_rc=$?
grep -E "error|FAILED" "$OUT/build.log" | head -40
note "build: rc=$build_rc in $(( $(date +%s) - start ))s"

GPU_TEST_BINARIES=("$BUILD/tests/mxattn_gpu_tests")
for bin in "${GPU_TEST_BINARIES[@]}"; do
  name=$(basename "$bin")
  if [ ! -x "$bin" ]; then
    note "$name: not built"
    continue
  fi
  echo "== $name"
  start=$(date +%s)
  "$bin" --gtest_filter="$FILTER" --gtest_output="json:$OUT/$name.json" 2>&1 | tee "$OUT/$name.log" | grep -vE "^\[ +(RUN|OK) +\]"
  rc=$?
  counts=$(python3 - "$OUT/$name.json" <<'PY' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
fails = [f"{s['name']}.{t['name']}" for s in d["testsuites"] for t in s["testsuite"] if t.get("failures")]
print(f"{d['tests'] - d['failures'] - d.get('disabled', 0)} passed, {d['failures']} failed"
      + (" (" + ", ".join(fails[:6]) + ")" if fails else ""))
PY
)
  note "$name: ${counts:-no result (rc=$rc)} in $(( $(date +%s) - start ))s"
done

if [ "${MXATTN_SANITIZER:-ON}" = ON ] && [ -x "$BUILD/tests/mxattn_gpu_tests" ] && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool"
    start=$(date +%s)
    timeout "${MXATTN_SANITIZER_TIMEOUT:-480}" compute-sanitizer --tool "$tool" --error-exitcode 9 "$BUILD/tests/mxattn_gpu_tests" \
      --gtest_filter="$SANITIZER_FILTER" >"$OUT/sanitizer_$tool.log" 2>&1
    rc=$?
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/sanitizer_$tool.log" | tail -1 | sed 's/^=* *//')
    tests=$(grep -E "^\[  (PASSED|FAILED)  \]" "$OUT/sanitizer_$tool.log" | head -2 | tr '\n' ' ')
    note "compute-sanitizer $tool: rc=$rc, ${summary:-no summary}; $tests in $(( $(date +%s) - start ))s"
  done
fi

if ls python/mxattn/_mxattn*.so >/dev/null 2>&1 && ls tests/gpu/test_*.py >/dev/null 2>&1; then
  echo "== pytest tests/gpu"
  start=$(date +%s)
  PYTHONPATH="$ROOT/python" python3 -m pytest -q -p no:cacheprovider --tb=short tests/gpu 2>&1 | tee "$OUT/pytest_gpu.log" | tail -40
  note "pytest tests/gpu: $(grep -E "passed|failed|error" "$OUT/pytest_gpu.log" | tail -1) in $(( $(date +%s) - start ))s"
else
  note "pytest tests/gpu: module not built"
fi

# The package's PyTorch API: its example (a Llama-style block decoding with MX KV caches against a BF16 cache)
# and what its Python calls cost over the kernels and the C++ launchers.
if ls python/mxattn/_mxattn*.so >/dev/null 2>&1; then
  echo "== examples/decode_llama_block.py"
  start=$(date +%s)
  PYTHONPATH="$ROOT/python" timeout 120 python3 examples/decode_llama_block.py 2>&1 | tee "$OUT/example_decode.log"
  note "example decode_llama_block: rc=${PIPESTATUS[0]} in $(( $(date +%s) - start ))s (table in $OUT/example_decode.log)"
  echo "== bench/python_overhead.py"
  PYTHONPATH="$ROOT/python" timeout 120 python3 bench/python_overhead.py --json "$OUT/python_overhead.json" 2>&1 |
    tee "$OUT/python_overhead.log"
  note "python overhead: $(grep -c . "$OUT/python_overhead.log") lines, $OUT/python_overhead.json"
  # Quantization against what users run today (torchao's MX and NVFP4 casts; its wheel travels in .whl).
  if python3 -c "import torchao" 2>/dev/null; then
    echo "== bench/quantize_torchao.py"
    PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" timeout 300 python3 bench/quantize_torchao.py \
      --json "$OUT/quantize_torchao.json" 2>&1 | tee "$OUT/quantize_torchao.log"
    note "quantize against torchao: rc=${PIPESTATUS[0]}, $OUT/quantize_torchao.json"
  else
    note "quantize against torchao: torchao not installed (its wheel goes in .whl)"
  fi
fi

# The README's code blocks, its GPU ones included (MXATTN_README_GPU=1): the documentation must run here too.
if ls python/mxattn/_mxattn*.so >/dev/null 2>&1; then
  echo "== pytest tests/python/test_readme.py (GPU blocks on)"
  start=$(date +%s)
  MXATTN_README_GPU=1 MXATTN_CLI="$BUILD/mxattn" PYTHONPATH="$ROOT/python" python3 -m pytest -q -p no:cacheprovider \
    --tb=short -rs tests/python/test_readme.py 2>&1 | tee "$OUT/pytest_readme.log" | tail -20
  note "pytest README blocks: $(grep -E "passed|failed|error" "$OUT/pytest_readme.log" | tail -1) in $(( $(date +%s) - start ))s"
else
  note "pytest README blocks: module not built"
fi

MXATTN_BIN="$BUILD/mxattn"
if [ -x "$MXATTN_BIN" ] && [ "${MXATTN_DEMO:-ON}" = ON ]; then
  echo "== mxattn demo (GPU quantizer against the CPU, prefill kernel error)"
  "$MXATTN_BIN" demo --seed 1 2>&1 | tee "$OUT/demo.log"
  note "demo: $(grep -c ' identical ' "$OUT/demo.log") of 7 formats bit-identical on the GPU; $(grep -c 'DIFFERS\|error' "$OUT/demo.log") differing or failed"
fi
for b in $BENCHES; do
  if [ ! -x "$MXATTN_BIN" ]; then
    note "bench $b: mxattn not built"
    continue
  fi
  echo "== mxattn bench $b"
  "$MXATTN_BIN" bench "$b" --json "$OUT/bench_$b.json" ${MXATTN_BENCH_ARGS:-} 2>&1 | tee "$OUT/bench_$b.log"
  note "bench $b: rc=$?, $OUT/bench_$b.json"
  if [ "$b" = attention ]; then
    # The baselines users would pick instead, on the same GPU in the same run: PyTorch SDPA (flash, cuDNN), BF16.
    echo "== PyTorch SDPA baselines"
    PYTHONUNBUFFERED=1 python3 bench/attention_sdpa.py --json "$OUT/attention_sdpa.json" --fp8-accuracy >"$OUT/bench_sdpa.log" 2>&1 ||
      tail -20 "$OUT/bench_sdpa.log"
    python3 bench/attention_sdpa.py --table "$OUT/bench_attention.json" "$OUT/attention_sdpa.json" \
      --merge "$OUT/attention_merged.json" >"$OUT/attention_table.txt" 2>&1
    note "bench attention vs SDPA: $OUT/attention_merged.json (table below)"
  fi
done

if [ -f "$OUT/attention_table.txt" ]; then
  echo
  echo "== attention against PyTorch SDPA"
  cat "$OUT/attention_table.txt"
fi
echo
echo "== summary"
for line in "${SUMMARY[@]}"; do echo "  $line"; done
if [ -f "$OUT/bench_quantize.json" ]; then
  python3 - "$OUT/bench_quantize.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"  {d['device']}: copy {d['copy_gbps']:.0f} GB/s")
print(f"  {'op':<10} {'format':<18} {'dtype':<5} {'scales':<8} {'MiB':>6} {'ms':>9} {'GB/s':>8} {'%copy':>6} {'%same':>6}")
for r in d["results"]:
    if r["mib"] in (64, 2048) or r["mib"] == 1024 and (r["op"] != "quantize" or r["note"] or r["dtype"] != "bf16" or r["scales"] != "tiled"):
        print(f"  {r['op']:<10} {r['format']:<18} {r['dtype']:<5} {r['scales']:<8} {r['mib']:>6.0f} {r['ms']:>9.4f} "
              f"{r['gbps']:>8.1f} {r['pct_of_copy']:>5.1f}% {r.get('pct_of_same_size_copy', 0):>5.1f}%  {r['note']}")
PY
fi
