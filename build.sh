#!/usr/bin/env bash
# Builds Hearth into ./dist.
#
# Linux: dist/hearth, the headless server and CLI; and dist/hearth-tray,
# the same with the panel menu (hearth menu), when the tray's build
# packages are installed (libayatana-appindicator3-dev libgtk-3-dev).
#
# macOS: dist/Hearth.app, the menu-bar app, signed for the hardened
# runtime. Needs Xcode's command line tools (clang, codesign, lipo, sips,
# iconutil, plutil). Settings, all optional:
#
#   HEARTH_VERSION        version string (default: main.version in app/main.go)
#   HEARTH_BUILD_NUMBER   CFBundleVersion (default: the git commit count, else 1)
#   HEARTH_ARCH           arm64 (default) or universal (arm64 + amd64; the
#                         amd64 half has no GPU backend: wgpu ships for arm64)
#   HEARTH_SIGN_IDENTITY  codesign identity, e.g. "Developer ID Application:
#                         Name (TEAMID)"; default "-" (ad-hoc: runs on this
#                         Mac, Gatekeeper refuses it elsewhere)
#   HEARTH_NOTARY_PROFILE a notarytool keychain profile: when set (and the
#                         identity is a Developer ID), the app is zipped,
#                         notarized, and the ticket stapled
#
# docs/macos.md walks through it.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p dist

version=${HEARTH_VERSION:-$(sed -n 's/^var version = "\(.*\)"$/\1/p' app/main.go)}
ldflags="-s -w -X main.version=$version"

case "$(uname -s)" in
Linux)
	go build -trimpath -ldflags "$ldflags" -o dist/hearth ./app
	echo "built dist/hearth ($version)"
	if pkg-config --exists ayatana-appindicator3-0.1 gtk+-3.0 2>/dev/null; then
		CGO_ENABLED=1 go build -trimpath -tags tray -ldflags "$ldflags" -o dist/hearth-tray ./app
		echo "built dist/hearth-tray (hearth menu shows the panel menu)"
	else
		echo "skipped dist/hearth-tray: install libayatana-appindicator3-dev and libgtk-3-dev for the panel menu"
	fi
	;;
Darwin)
	min_macos=$(/usr/libexec/PlistBuddy -c "Print :LSMinimumSystemVersion" Info.plist)
	export MACOSX_DEPLOYMENT_TARGET=$min_macos
	export CGO_ENABLED=1
	app=dist/Hearth.app
	rm -rf "$app"
	mkdir -p "$app/Contents/MacOS" "$app/Contents/Resources"

	arches=(arm64)
	if [ "${HEARTH_ARCH:-arm64}" = universal ]; then
		arches=(arm64 amd64)
	fi
	bins=()
	for arch in "${arches[@]}"; do
		GOOS=darwin GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "dist/hearth-darwin-$arch" ./app
		bins+=("dist/hearth-darwin-$arch")
	done
	if [ ${#bins[@]} -gt 1 ]; then
		lipo -create -output "$app/Contents/MacOS/hearth" "${bins[@]}"
	else
		cp "${bins[0]}" "$app/Contents/MacOS/hearth"
	fi

	build=${HEARTH_BUILD_NUMBER:-$(git rev-list --count HEAD 2>/dev/null || echo 1)}
	cp Info.plist "$app/Contents/Info.plist"
	plutil -replace CFBundleShortVersionString -string "${version%-dev}" "$app/Contents/Info.plist"
	plutil -replace CFBundleVersion -string "$build" "$app/Contents/Info.plist"
	plutil -lint "$app/Contents/Info.plist" entitlements.plist

	iconset=$(mktemp -d)/Hearth.iconset
	mkdir -p "$iconset"
	for size in 16 32 128 256 512; do
		sips -z $size $size assets/icons/app.png --out "$iconset/icon_${size}x${size}.png" >/dev/null
		sips -z $((size * 2)) $((size * 2)) assets/icons/app.png --out "$iconset/icon_${size}x${size}@2x.png" >/dev/null
	done
	iconutil -c icns -o "$app/Contents/Resources/Hearth.icns" "$iconset"

	identity=${HEARTH_SIGN_IDENTITY:--}
	sign=(codesign --force --options runtime --entitlements entitlements.plist --sign "$identity")
	if [ "$identity" != - ]; then
		sign+=(--timestamp)
	fi
	"${sign[@]}" "$app"
	codesign --verify --strict --verbose=2 "$app"
	echo "built $app ($version, ${arches[*]}, signed by $identity)"

	if [ -n "${HEARTH_NOTARY_PROFILE:-}" ]; then
		if [ "$identity" = - ]; then
			echo "build.sh: notarization needs a Developer ID identity (HEARTH_SIGN_IDENTITY), not ad-hoc signing" >&2
			exit 1
		fi
		ditto -c -k --keepParent "$app" dist/Hearth.zip
		xcrun notarytool submit dist/Hearth.zip --keychain-profile "$HEARTH_NOTARY_PROFILE" --wait
		xcrun stapler staple "$app"
		spctl --assess --type execute --verbose "$app"
		echo "notarized and stapled $app"
	fi
	;;
*)
	echo "build.sh: $(uname -s) is not handled (Linux builds the binary, macOS the app bundle)" >&2
	exit 1
	;;
esac
