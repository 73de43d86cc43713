//go:build !amd64

package cpu

// available lists the kernel sets this CPU runs, fastest first.
func available() []*kernels { return []*kernels{generic} }
