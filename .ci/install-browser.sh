#!/bin/sh
# Headless Chromium for the inspector's browser tests (tests/test_ui_browser.py), from
# Debian's packages only: chromium + chromium-driver (the security archive carries the
# current release). Playwright drives it (executable_path); nothing is downloaded from
# anywhere else, and `playwright install` is never run.
#
# Installs only when chromium is missing. Never fails: without root or apt (a laptop, a
# non-Debian machine) it says why and the browser tests skip with that reason.
set -u
if [ -n "${HIVEMEM_CHROMIUM:-}" ] && [ -x "$HIVEMEM_CHROMIUM" ]; then
    exit 0
fi
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-browser: no apt-get here; the browser tests will skip (install chromium, or set HIVEMEM_CHROMIUM)" >&2
    exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        echo "install-browser: not root and no sudo; the browser tests will skip (apt-get install chromium chromium-driver)" >&2
        exit 0
    fi
fi
echo "install-browser: apt-get install chromium chromium-driver" >&2
export DEBIAN_FRONTEND=noninteractive
if $SUDO apt-get update -qq >/dev/null \
    && $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null; then
    chromium --version >&2 || true
else
    echo "install-browser: apt-get failed; the browser tests will skip" >&2
fi
exit 0
