#!/usr/bin/env bash
# Makes sure the build tools are there at the versions the build needs; quiet and fast when they are.
#   - Debian packages (apt-get; root or sudo): g++, GoogleTest, CLI11, python3-venv, python3-dev.
#   - .venv (python3 -m venv): CMake and Ninja from PyPI, installed there only when the first cmake /
#     ninja on PATH (with .venv/bin in front, as demo.sh and test.sh run the build) is too old.
# The minimum CMake version is the one in CMakeLists.txt's cmake_minimum_required line; it is not
# repeated here. Presence is not enough: Debian 12's CMake 3.25.1 exists but cannot compile CUDA as C++20.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"

# Ninja 1.10: the oldest with the restat/dyndep behaviour CMake's Ninja generator relies on.
NINJA_MIN=1.10
# g++ 10: the first with the C++20 library parts the sources use (<bit>, <span>, concepts).
GXX_MIN=10
CMAKE_MIN=$(sed -nE 's/^cmake_minimum_required\(VERSION ([0-9]+(\.[0-9]+)*).*/\1/p' CMakeLists.txt)
[ -n "$CMAKE_MIN" ] || { echo "setup_tools: no cmake_minimum_required(VERSION ...) in CMakeLists.txt" >&2; exit 1; }

# version_ge A B: A >= B (dotted versions; a suffix such as .git.kitware sorts after the numbers).
version_ge() { [ "$(printf '%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }
tool_version() { "$1" --version 2>/dev/null | head -1 | grep -oE '[0-9]+(\.[0-9]+)+' | head -1; }
python_include() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["include"])'; }

# A venv made by a Python since removed is remade (below, once python3-venv is there).
.venv/bin/python -c '' 2>/dev/null || rm -rf .venv

# Debian packages.
need=()
command -v g++ >/dev/null || need+=(g++)
[ -f /usr/include/gtest/gtest.h ] || need+=(libgtest-dev)
[ -f /usr/include/CLI/CLI.hpp ] || need+=(libcli11-dev)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
[ -f "$(python_include python3)/Python.h" ] || need+=(python3-dev)  # for the nanobind module
if [ ${#need[@]} -gt 0 ]; then
  echo "setup_tools: installing ${need[*]} (apt-get)"
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi
gxx=$(g++ -dumpversion)
version_ge "$gxx" "$GXX_MIN" || { echo "setup_tools: g++ $gxx is older than $GXX_MIN (C++20)" >&2; exit 1; }

# The venv, from the first python3 on PATH (the system's, in a clean environment).
[ -d .venv ] || python3 -m venv .venv

# CMake and Ninja: whichever comes first on PATH, if new enough; otherwise from PyPI into .venv.
pip_install() { .venv/bin/python -m pip install -q --disable-pip-version-check "$@"; }
# ensure_tool NAME MIN: NAME on PATH at version MIN or newer, else installed from PyPI (package NAME).
ensure_tool() {
  local name=$1 min=$2 version
  version=$(tool_version "$name" || true)
  if [ -z "$version" ] || ! version_ge "$version" "$min"; then
    echo "setup_tools: $name ${version:-missing}, need >= $min: installing it into .venv"
    pip_install "$name>=$min"
    hash -r
    version=$(tool_version "$name" || true)
    version_ge "${version:-0}" "$min" ||
      { echo "setup_tools: $(command -v "$name") is ${version:-unusable}, need >= $min" >&2; exit 1; }
  fi
}
ensure_tool cmake "$CMAKE_MIN"
ensure_tool ninja "$NINJA_MIN"
