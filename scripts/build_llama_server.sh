#!/usr/bin/env bash
# Build llama.cpp's own `llama-server` from the sources vendored in the llama-cpp-python sdist
# of the version installed in the venv, and cache it outside the repo:
#
#     ${REINS_CACHE:-$HOME/.cache/reins}/llama-server-<version>/llama-server
#
# If that binary already exists and runs, nothing is rebuilt. The last line printed is always
# the binary's path. The build happens in a temporary directory (about 8 minutes on 2 cores)
# and never touches the repo tree.
#
# Environment:
#   PYTHON                   python whose llama-cpp-python version is used
#                            (default: the repo's .venv/bin/python, else python3)
#   REINS_CACHE              cache root (default: $HOME/.cache/reins)
#   REINS_LLAMA_CMAKE_ARGS   extra cmake configure arguments (word-split)
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
cache_dir="${REINS_CACHE:-$HOME/.cache/reins}/llama-server-$version"
binary="$cache_dir/llama-server"

if [[ -x "$binary" ]] && "$binary" --version >/dev/null 2>&1; then
    echo "llama-server $version already built" >&2
    echo "$binary"
    exit 0
fi

for tool in cmake g++ tar; do
    command -v "$tool" >/dev/null || { echo "error: $tool is required" >&2; exit 1; }
done

work="$(mktemp -d "${TMPDIR:-/tmp}/reins-llama-server.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "downloading the llama-cpp-python $version sdist" >&2
"$PYTHON" -m pip download --quiet --no-deps --no-binary :all: \
    "llama-cpp-python==$version" -d "$work/sdist" >&2
sdist="$(find "$work/sdist" -maxdepth 1 -name '*.tar.gz' | head -n 1)"
[[ -n "$sdist" ]] || { echo "error: no sdist downloaded" >&2; exit 1; }
tar -xzf "$sdist" -C "$work"
src="$(find "$work" -mindepth 3 -maxdepth 3 -type d -path '*/vendor/llama.cpp' | head -n 1)"
[[ -n "$src" ]] || { echo "error: vendor/llama.cpp not found in $sdist" >&2; exit 1; }

generator=()
if command -v ninja >/dev/null; then
    generator=(-G Ninja)
fi

# Offline and self-contained: no curl, no OpenSSL (plain HTTP on loopback is all the tests need),
# no web UI download from Hugging Face at build time, static llama/ggml libraries.
# shellcheck disable=SC2206
extra=(${REINS_LLAMA_CMAKE_ARGS:-})
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

# Install into a fresh directory next to the final one, then swap it in.
mkdir -p "$(dirname "$cache_dir")"
staging="$(mktemp -d "${cache_dir}.tmp.XXXXXX")"
trap 'rm -rf "$work" "$staging"' EXIT
cp "$built" "$staging/llama-server"
# Copy any shared library produced by this build that the binary links to (none with a static
# build; system libraries such as libstdc++ and libgomp stay where they are).
while read -r lib; do
    [[ "$lib" == "$work"/* ]] && cp -L "$lib" "$staging/"
done < <(ldd "$built" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}')
chmod 755 "$staging"
rm -rf "$cache_dir"
mv "$staging" "$cache_dir"

if [[ -n "$(find "$cache_dir" -maxdepth 1 -name '*.so*' -print -quit)" ]]; then
    echo "note: shared libraries installed next to the binary; run it with LD_LIBRARY_PATH=$cache_dir" >&2
fi
"$binary" --version >&2
echo "$binary"
