#!/usr/bin/env bash
# Builds everything and runs every test: C++ (GoogleTest) and Python (pytest, in .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"  # the CMake and Ninja setup_tools.sh put there, when the system's are too old
bash scripts/setup_tools.sh
.venv/bin/python -m pip install -q --disable-pip-version-check -r python/requirements-test.txt
cmake -S . -B build -G Ninja -DMXATTN_TESTS=ON -DMXATTN_PYTHON=ON -DPython_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
cmake --build build -j "$(nproc)"
ctest --test-dir build --output-on-failure -j "$(nproc)"
