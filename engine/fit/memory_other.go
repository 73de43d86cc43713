// The GPU working-set limit elsewhere.

//go:build !darwin && !linux

package fit

// metalWorkingSet reports false: only macOS has a Metal working-set limit.
func metalWorkingSet() (uint64, bool) { return 0, false }
