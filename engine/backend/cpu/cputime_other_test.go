//go:build !unix

package cpu

import "time"

// cpuTime is not reported on this platform.
func cpuTime() time.Duration { return 0 }
