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
