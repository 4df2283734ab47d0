#!/usr/bin/env bash
# Build llama.cpp's own `llama-server` from the sources vendored in the llama-cpp-python sdist
# of the version installed in the venv, and cache it outside the repo:
#
#     ${REINS_CACHE:-$HOME/.cache/reins}/llama-server-<version>/llama-server
#     ${REINS_CACHE:-$HOME/.cache/reins}/llama-server-<version>/templates/*.jinja
#
# The templates are llama.cpp's vendored chat templates (models/templates). SmolLM2's own template
# cannot render tools, so tool-calling tests start the server with
# `--chat-template-file templates/Qwen-Qwen2.5-7B-Instruct.jinja` (ChatML with <tool_call>).
#
# A binary that already exists and runs is never rebuilt (if only the templates are missing, they
# are fetched from the sdist without building). The last line printed is always the binary's path.
# The build happens in a temporary directory (about 8-10 minutes on 2 cores) and never touches
# the repo tree.
#
# Environment:
#   PYTHON                   python whose llama-cpp-python version is used
#                            (default: the repo's .venv/bin/python, else python3)
#   REINS_CACHE              cache root (default: $HOME/.cache/reins)
#   REINS_LLAMA_CMAKE_ARGS   cmake arguments replacing the portable CPU defaults (word-split)
#   JOBS                     parallel build jobs (default: 2)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x "$repo_root/.venv/bin/python" ]]; then
        PYTHON="$repo_root/.venv/bin/python"
    else
        PYTHON=python3
    fi
fi

version="$("$PYTHON" -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))')"
# Built for any AVX2 CPU, not -march=native (see build_llama_wheel.sh): the suffix keeps a
# native build of an earlier checkout from being taken for it.
cache_dir="${REINS_CACHE:-$HOME/.cache/reins}/llama-server-$version-avx2"
binary="$cache_dir/llama-server"
templates="$cache_dir/templates"

have_binary() { [[ -x "$binary" ]] && "$binary" --version >/dev/null 2>&1; }
have_templates() { [[ -f "$templates/Qwen-Qwen2.5-7B-Instruct.jinja" ]]; }

if have_binary && have_templates; then
    echo "llama-server $version already built" >&2
    echo "$binary"
    exit 0
fi

for tool in tar cmake g++; do
    if [[ "$tool" == tar ]] || ! have_binary; then
        command -v "$tool" >/dev/null || { echo "error: $tool is required" >&2; exit 1; }
    fi
done

mkdir -p "$cache_dir"
work="$(mktemp -d "${TMPDIR:-/tmp}/reins-llama-server.XXXXXX")"
staging=""
trap 'rm -rf "$work" "$binary.tmp.$$" ${staging:+"$staging"}' EXIT

echo "downloading the llama-cpp-python $version sdist" >&2
# --no-binary for llama-cpp-python only (not :all:): pip prepares the sdist's metadata, and with
# :all: it would build the build backend's own requirements (even cmake) from source too.
"$PYTHON" -m pip download --quiet --no-deps --no-binary llama-cpp-python \
    "llama-cpp-python==$version" -d "$work/sdist" >&2
sdist="$(find "$work/sdist" -maxdepth 1 -name '*.tar.gz' | head -n 1)"
[[ -n "$sdist" ]] || { echo "error: no sdist downloaded" >&2; exit 1; }
tar -xzf "$sdist" -C "$work"
src="$(find "$work" -mindepth 3 -maxdepth 3 -type d -path '*/vendor/llama.cpp' | head -n 1)"
[[ -n "$src" ]] || { echo "error: vendor/llama.cpp not found in $sdist" >&2; exit 1; }

if ! have_templates; then
    staging="$(mktemp -d "$cache_dir/templates.tmp.XXXXXX")"
    cp "$src"/models/templates/*.jinja "$staging/"
    chmod 755 "$staging"
    rm -rf "$templates"
    mv "$staging" "$templates"
    echo "installed chat templates into $templates" >&2
fi

if ! have_binary; then
    generator=()
    if command -v ninja >/dev/null; then
        generator=(-G Ninja)
    fi

    # Offline and self-contained: no curl, no OpenSSL (plain HTTP on loopback is all the tests
    # need), no web UI download from Hugging Face at build time (LLAMA_USE_PREBUILT_UI defaults
    # to ON and would try), static llama/ggml libraries.
    # shellcheck disable=SC2206
    extra=(${REINS_LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON})
    echo "configuring llama.cpp in $work/build" >&2
    cmake -S "$src" -B "$work/build" "${generator[@]}" \
        -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF \
        -DLLAMA_BUILD_SERVER=ON \
        -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_CURL=OFF \
        -DLLAMA_OPENSSL=OFF \
        -DLLAMA_BUILD_UI=OFF \
        -DLLAMA_USE_PREBUILT_UI=OFF \
        "${extra[@]}" >&2

    echo "building llama-server (several minutes)" >&2
    start=$SECONDS
    cmake --build "$work/build" --target llama-server -j "${JOBS:-2}" >&2
    echo "built in $((SECONDS - start)) s" >&2

    built="$(find "$work/build" -type f -name llama-server -perm -u+x | head -n 1)"
    [[ -n "$built" ]] || { echo "error: llama-server binary not found after the build" >&2; exit 1; }

    # Any shared library from this build that the binary links to goes next to it (none with a
    # static build; system libraries such as libstdc++ and libgomp stay where they are).
    while read -r lib; do
        if [[ "$lib" == "$work"/* ]]; then
            cp -L "$lib" "$cache_dir/"
            echo "note: installed $(basename "$lib"); run with LD_LIBRARY_PATH=$cache_dir" >&2
        fi
    done < <(ldd "$built" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}')
    # Copy under a temporary name, then rename: a running server is never overwritten in place.
    cp "$built" "$binary.tmp.$$"
    chmod 755 "$binary.tmp.$$"
    mv -f "$binary.tmp.$$" "$binary"
fi

"$binary" --version >&2
echo "$binary"
