//go:build !amd64

package cpu

// available lists the kernel sets this CPU runs, fastest first.
func available() []*kernels { return []*kernels{generic} }

// gemmI8VNNIKernelOrNil is nil: the VNNI kernel exists on amd64 only.
func gemmI8VNNIKernelOrNil() func(blocks, steps int, w []uint32, sc, bi []float32, x []uint32, d, xs, c []float32, accumulate bool) {
	return nil
}

// avx2KernelsOrNil is nil: the avx2 set exists on amd64 only.
func avx2KernelsOrNil() *kernels { return nil }
