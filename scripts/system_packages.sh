#!/usr/bin/env bash
# The system packages `make test`, `make demo` and `make bench` need (Debian's names), in one
# place: `scripts/system_packages.sh test|demo|bench|all` checks each by its command or library
# and installs the missing ones with apt-get when it may (root, or sudo without a password).
# Where it may not, or there is no apt-get, it prints one line naming the command and fails,
# so make stops before the first test.
set -euo pipefail
group="${1:-all}"
case "$group" in
test | demo | bench | all) ;;
*) echo "usage: $0 test|demo|bench|all" >&2 && exit 2 ;;
esac

need=()
# cmake and a C++ compiler build llama-cpp-python's wheel and llama-server, once each (all).
command -v cmake > /dev/null || need+=(cmake)
command -v g++ > /dev/null || need+=(g++)
if [ "$group" != demo ]; then
    # The command sandbox: bubblewrap, and libseccomp for its seccomp filter.
    command -v bwrap > /dev/null || need+=(bubblewrap)
    "${PYTHON:-python3}" -c 'import ctypes.util as u, sys; sys.exit(not u.find_library("seccomp"))' ||
        need+=(libseccomp2)
    # Node and npm for the npm MCP servers the tests and benchmarks talk to.
    command -v npm > /dev/null || need+=(nodejs npm)
fi
if [ "$group" = test ] || [ "$group" = all ]; then
    # A real terminal for `reins chat`'s tests.
    command -v tmux > /dev/null || need+=(tmux)
    # The shells whose Tab completion the tests run (bash is there already).
    command -v zsh > /dev/null || need+=(zsh)
    command -v fish > /dev/null || need+=(fish)
    # A real browser for the web page's tests (Playwright drives Debian's Chromium).
    command -v chromium > /dev/null || need+=(chromium chromium-driver)
fi
if [ "$group" != demo ]; then
    # A real PostgreSQL for the event log's tests and the scale benchmark, which start their
    # own server (initdb and pg_ctl in a temporary folder); pg_ctlcluster comes with it.
    command -v pg_ctlcluster > /dev/null || need+=(postgresql)
fi
[ ${#need[@]} -eq 0 ] && exit 0

what="make $group needs ${need[*]}"
[ "$group" = all ] && what="reins needs ${need[*]}"
if ! command -v apt-get > /dev/null; then
    echo "$what (Debian's names): install them with the system's package manager" >&2
    exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
    sudo=()
elif command -v sudo > /dev/null && sudo -n true 2> /dev/null; then
    sudo=(sudo -n)
else
    echo "$what: run  sudo apt-get install ${need[*]}  (or as root: make system)" >&2
    exit 1
fi
echo "installing ${need[*]} (apt-get)" >&2
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" > /dev/null
