#!/usr/bin/env bash
# Builds Hearth. On Linux: the plain binary ./dist/hearth. The macOS bundle
# (Hearth.app, signed) is added with the menu-bar app.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p dist
case "$(uname -s)" in
Linux)
	go build -trimpath -o dist/hearth ./app
	echo "built dist/hearth"
	;;
*)
	echo "build.sh: $(uname -s) is not handled yet (the macOS bundle comes with the menu-bar app)" >&2
	exit 1
	;;
esac
