#!/usr/bin/env bash
# Renders the icons' PNGs from their SVG sources (rsvg-convert, Debian's
# librsvg2-bin). The PNGs are committed; run this after editing an SVG.
set -euo pipefail
cd "$(dirname "$0")"
for s in menu-template menu-template-busy tray tray-busy; do
	rsvg-convert -w 32 -h 32 -o "$s.png" "$s.svg"
done
rsvg-convert -w 1024 -h 1024 -o app.png app.svg
