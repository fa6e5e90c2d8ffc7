#!/usr/bin/env bash
# Builds the CLI and runs `mxattn demo` (extra arguments go to the demo).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"  # the CMake and Ninja setup_tools.sh put there, when the system's are too old
bash scripts/setup_tools.sh
cmake -S . -B build -G Ninja -DMXATTN_TESTS=OFF -DMXATTN_PYTHON=OFF >/dev/null
cmake --build build --target mxattn
./build/mxattn formats
./build/mxattn demo "$@"
