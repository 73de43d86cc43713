// Builds without a tray: Linux by default (the tray needs GTK and
// appindicator; build with -tags tray), macOS without cgo, and other
// systems.

//go:build !(darwin && cgo) && !tray

package main

import "context"

// trayAvailable reports whether this build can show a menu-bar tray.
const trayAvailable = false

// runTray reports that there is no tray.
func runTray(ctx context.Context, m *menuModel, cleanup func()) error { return errNoTray }

// quitTray has no tray to quit.
func quitTray() {}
