#!/usr/bin/env bash
# Installs Debian's chromium, which test/e2e/dashboard drives headless through chromedp, when no
# chromium is on PATH. A no-op once installed. Runs apt-get as root (CI) or through sudo.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "chromium is missing and apt-get is not available: install chromium (the dashboard's browser test needs it)" >&2
	exit 1
fi
sudo=()
if [ "$(id -u)" != 0 ]; then
	sudo=(sudo)
fi
echo "installing chromium (apt-get) for the dashboard's browser test" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium
command -v chromium >/dev/null
