// The GPU working-set limit on Linux.

package fit

// metalWorkingSet reports false: Linux has no Metal, and the CPU and
// Vulkan backends are bounded by physical memory alone.
func metalWorkingSet() (uint64, bool) { return 0, false }
