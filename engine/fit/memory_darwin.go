// The GPU working-set limit on macOS.

package fit

// metalWorkingSet returns Metal's recommendedMaxWorkingSetSize for the
// default device. It reports false for now: the darwinkit call
// (MTLCreateSystemDefaultDevice().recommendedMaxWorkingSetSize) arrives
// with the menu-bar issue, which brings darwinkit into the build.
func metalWorkingSet() (uint64, bool) { return 0, false }
