// How Hearth starts from a macOS app bundle: Finder and the LaunchAgent
// run Hearth.app/Contents/MacOS/hearth, and that means the menu-bar app.

package main

import (
	"os"
	"path/filepath"
	"strings"
)

// defaultCommand is the command run when none is named: menu for the
// executable of an app bundle (when this build has a tray), serve
// otherwise.
func defaultCommand(exe string) string {
	if trayAvailable && inAppBundle(exe) {
		return "menu"
	}
	return "serve"
}

// inAppBundle reports whether exe is X.app/Contents/MacOS/exe.
func inAppBundle(exe string) bool {
	macos := filepath.Dir(exe)
	contents := filepath.Dir(macos)
	return filepath.Base(macos) == "MacOS" && filepath.Base(contents) == "Contents" &&
		strings.HasSuffix(filepath.Dir(contents), ".app")
}

// executable is this program's path with links resolved ("" when unknown).
func executable() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		return r
	}
	return exe
}

// dropFinderArgs removes the -psn_0_NNNN process serial number older
// macOS versions pass to an app Finder opens.
func dropFinderArgs(args []string) []string {
	out := args[:0:0]
	for _, a := range args {
		if !strings.HasPrefix(a, "-psn_") {
			out = append(out, a)
		}
	}
	return out
}
