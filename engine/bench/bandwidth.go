package bench

import (
	"encoding/binary"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"
)

// Bandwidth is the result of the streaming-read microbenchmark.
type Bandwidth struct {
	GBPerS  float64   `json:"gb_s"`    // median over passes, 1 GB = 1e9 bytes
	Passes  []float64 `json:"passes"`  // GB/s of each timed pass
	Bytes   int64     `json:"bytes"`   // buffer size
	Threads int       `json:"threads"` // goroutines reading at once
	// Device is set when the backend's own kernels read device memory
	// (the GPU; engine.Model.ReadBandwidth), not goroutines host memory.
	Device bool `json:"device,omitempty"`
}

// MeasureBandwidth reads a buffer of size bytes (rounded to whole 128-byte
// blocks per thread) with threads goroutines, each streaming through its
// own contiguous share with 32-byte loads and a software prefetch, as the
// matmul kernels stream their share of a weight. One untimed pass faults
// the pages in; the median of passes timed passes is the result. A buffer
// several times the last-level cache measures DRAM; Run sizes it like the
// model's per-token reads. It is freed before returning.
func MeasureBandwidth(size int64, threads, passes int) Bandwidth {
	threads = max(1, threads)
	share := size / int64(threads) / 128 * 128
	buf := make([]byte, share*int64(threads))
	for i := 0; i+8 <= len(buf); i += 4096 {
		binary.LittleEndian.PutUint64(buf[i:], uint64(i))
	}
	res := Bandwidth{Bytes: int64(len(buf)), Threads: threads}
	var sink uint64
	var mu sync.Mutex
	pass := func() time.Duration {
		var wg sync.WaitGroup
		start := time.Now()
		for t := 0; t < threads; t++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := stream(buf[int64(t)*share : int64(t+1)*share])
				mu.Lock()
				sink += s
				mu.Unlock()
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	pass()
	for i := 0; i < max(1, passes); i++ {
		d := pass()
		res.Passes = append(res.Passes, float64(len(buf))/d.Seconds()/1e9)
	}
	res.GBPerS = median(res.Passes)
	runtime.KeepAlive(sink)
	buf = nil
	debug.FreeOSMemory()
	return res
}

// streamGo is the portable streaming read: eight 64-bit loads per step.
func streamGo(buf []byte) uint64 {
	var s0, s1, s2, s3 uint64
	for i := 0; i+64 <= len(buf); i += 64 {
		b := buf[i : i+64 : i+64]
		s0 += binary.LittleEndian.Uint64(b[0:]) + binary.LittleEndian.Uint64(b[32:])
		s1 += binary.LittleEndian.Uint64(b[8:]) + binary.LittleEndian.Uint64(b[40:])
		s2 += binary.LittleEndian.Uint64(b[16:]) + binary.LittleEndian.Uint64(b[48:])
		s3 += binary.LittleEndian.Uint64(b[24:]) + binary.LittleEndian.Uint64(b[56:])
	}
	return s0 + s1 + s2 + s3
}

// median of xs (which it sorts); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
