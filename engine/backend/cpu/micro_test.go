package cpu

import (
	"testing"
	"time"
)

// BenchmarkMicrokernel times the GEMM microkernel alone on data in L1, the
// ceiling of the GEMM path.
func BenchmarkMicrokernel(b *testing.B) {
	for _, ks := range KernelSets() {
		k, _ := kernelsNamed(ks)
		b.Run(ks, func(b *testing.B) {
			const kc = 256
			a := make([]float32, k.mr*kc)
			bb := make([]float32, kc*k.nr)
			c := make([]float32, k.mr*k.nr)
			for i := range a {
				a[i] = 1
			}
			start, cpu0 := time.Now(), cpuTime()
			for i := 0; i < b.N; i++ {
				k.gemm(kc, a, kc, bb, c, k.nr, true)
			}
			flop := float64(2*k.mr*k.nr*kc) * float64(b.N)
			b.ReportMetric(flop/time.Since(start).Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(flop/(cpuTime()-cpu0).Seconds()/1e9, "GFLOP/cpu-s")
		})
	}
}

// BenchmarkMicrokernelI8 times the int8 GEMM microkernels alone on data
// in L1 (512 elements deep, the longest blocks each takes), the ceiling of
// the int8 prefill path, for each set that has one. GOP counts a multiply and an
// add per weight–activation pair, as GFLOP does for the float kernel.
func BenchmarkMicrokernelI8(b *testing.B) {
	type kern struct {
		name          string
		mr, nr, steps int
		fn            func(blocks, steps int, w []uint32, sc, bi []float32, x []uint32, d, xs, c []float32, accumulate bool)
	}
	var ks []kern
	for _, name := range KernelSets() {
		k, _ := kernelsNamed(name)
		if k.gemmI8 != nil {
			ks = append(ks, kern{name, k.i8mr, k.i8nr, k.i8steps, k.gemmI8})
		}
	}
	for _, k := range ks {
		b.Run(k.name, func(b *testing.B) {
			const kc = 512
			blocks := kc / (4 * k.steps)
			w := make([]uint32, kc/4*k.nr)
			sc := make([]float32, blocks*k.nr)
			bi := make([]float32, blocks*k.nr)
			x := make([]uint32, kc/4*k.mr)
			d := make([]float32, blocks*k.mr)
			xs := make([]float32, blocks*k.mr)
			c := make([]float32, k.mr*k.nr)
			start, cpu0 := time.Now(), cpuTime()
			for i := 0; i < b.N; i++ {
				k.fn(blocks, k.steps, w, sc, bi, x, d, xs, c, true)
			}
			op := float64(2*k.mr*k.nr*kc) * float64(b.N)
			b.ReportMetric(op/time.Since(start).Seconds()/1e9, "GOP/s")
			b.ReportMetric(op/(cpuTime()-cpu0).Seconds()/1e9, "GOP/cpu-s")
		})
	}
}
