// Launch at login elsewhere: not available.

//go:build !darwin && !linux

package main

import (
	"fmt"
	"runtime"
)

// newLoginItem reports that this system has no launch-at-login support.
func newLoginItem(env getenv, exe string) (loginItem, error) {
	return loginItem{}, fmt.Errorf("launch at login is not supported on %s", runtime.GOOS)
}
