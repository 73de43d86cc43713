package cpu

import (
	"runtime"

	gcpu "github.com/shirou/gopsutil/v4/cpu"
)

// DefaultThreads is the number of physical cores (hyperthreads share a
// core's vector units, which the matmul kernels saturate), at most
// GOMAXPROCS, and at least 1.
func DefaultThreads() int {
	n := runtime.GOMAXPROCS(0)
	if c, err := gcpu.Counts(false); err == nil && c > 0 {
		n = min(n, c)
	}
	return max(1, n)
}
