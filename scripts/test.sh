#!/usr/bin/env bash
# Builds everything and runs every test: C++ (GoogleTest) and Python (pytest, in .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_tools.sh
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r python/requirements-test.txt
cmake -S . -B build -G Ninja -DMXATTN_TESTS=ON -DMXATTN_PYTHON=ON -DPython_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
cmake --build build -j "$(nproc)"
ctest --test-dir build --output-on-failure -j "$(nproc)"
