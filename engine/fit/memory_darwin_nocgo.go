//go:build darwin && !cgo

// The GPU working-set limit on macOS, in a build without cgo.

package fit

// metalWorkingSet reports false: reading Metal's limit needs cgo.
func metalWorkingSet() (uint64, bool) { return 0, false }
