// The desktop elsewhere (and on macOS without cgo): nothing to open, copy
// to, notify or ask with.

//go:build !linux && !(darwin && cgo)

package main

import (
	"fmt"
	"runtime"
)

// systemDesktop is this session's desktop.
type systemDesktop struct{ env getenv }

var errNoDesktop = fmt.Errorf("not supported on %s", runtime.GOOS)

// OpenURL reports that it is not supported here.
func (systemDesktop) OpenURL(url string) error { return errNoDesktop }

// Copy reports that it is not supported here.
func (systemDesktop) Copy(text string) error { return errNoDesktop }

// Notify reports that it is not supported here.
func (systemDesktop) Notify(title, body string) error { return errNoDesktop }

// Ask reports that it is not supported here.
func (systemDesktop) Ask(title, prompt string) (string, bool, error) { return "", false, errNoDesktop }
