#!/usr/bin/env bash
# Build the llama-cpp-python wheel for the embedded model once, for any x86-64 CPU with AVX2,
# and cache it outside the repo; print its path (the last line).
#
#     ${REINS_CACHE:-$HOME/.cache/reins}/wheels/llama_cpp_python-<version>-*.whl
#
# Why not let pip build it: pip compiles llama.cpp with -march=native, for every instruction the
# CPU's cpuid names. Some virtual machines name AMX and AVX-512 FP16 without enabling them, and
# the model then dies of SIGILL at its first batch. A wheel built for AVX2/FMA/F16C runs on all
# of them (and on the machine that built it), and a wheel cached here is never rebuilt.
#
# Environment:
#   PYTHON                   python used to build (default: the repo's .venv/bin/python, else python3)
#   REINS_CACHE              cache root (default: $HOME/.cache/reins)
#   REINS_LLAMA_CMAKE_ARGS   cmake arguments replacing the portable defaults below
set -euo pipefail

version="0.3.36"  # keep in step with pyproject.toml's llama-cpp-python pin
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x "$repo_root/.venv/bin/python" ]]; then
        PYTHON="$repo_root/.venv/bin/python"
    else
        PYTHON=python3
    fi
fi
wheels="${REINS_CACHE:-$HOME/.cache/reins}/wheels"
found() { find "$wheels" -maxdepth 1 -name "llama_cpp_python-$version-*.whl" 2>/dev/null | head -n 1; }

if [[ -z "$(found)" ]]; then
    mkdir -p "$wheels"
    work="$(mktemp -d "${TMPDIR:-/tmp}/reins-llama-wheel.XXXXXX")"
    trap 'rm -rf "$work"' EXIT
    echo "building llama-cpp-python $version for AVX2 CPUs (about 9 minutes on 2 cores)" >&2
    CMAKE_ARGS="${REINS_LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}" \
        "$PYTHON" -m pip wheel --quiet --no-deps --no-cache-dir \
        "llama-cpp-python==$version" -w "$work" >&2
    mv "$work"/llama_cpp_python-*.whl "$wheels/"
fi
found
