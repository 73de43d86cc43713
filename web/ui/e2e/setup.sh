#!/usr/bin/env bash
# Installs what the web chat's browser tests (web/ui/browser_test.go) need:
# Debian's Chromium (never a browser downloaded by Playwright) and the
# driver's npm packages (playwright-core only, pinned by package-lock.json).
# Idempotent; run as root. .ci/setup calls it.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x /usr/bin/chromium ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y --no-install-recommends chromium fonts-dejavu-core
fi
# playwright-core needs Node 20 or later (Debian 12's own nodejs is 18).
if ! node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' 2>/dev/null; then
	echo "web/ui/e2e/setup.sh: Node.js 20 or later is required (found: $(node --version 2>/dev/null || echo none))" >&2
	exit 1
fi
want=$(node -p "require('./package-lock.json').packages['node_modules/playwright-core'].version")
have=$(node -p "require('./node_modules/playwright-core/package.json').version" 2>/dev/null || true)
if [ "$want" != "$have" ]; then
	# playwright-core downloads no browser by itself; the variable makes
	# sure nothing tries.
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
fi
echo "web/ui/e2e: $(/usr/bin/chromium --version 2>/dev/null), playwright-core $want"
