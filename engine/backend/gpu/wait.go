package gpu

import (
	"runtime"
	"time"
)

// The host waits for the device by polling without blocking, never with
// wgpu's blocking poll. wgpu-core 0.19, which the pinned binding links,
// waits at most 5 s in a blocking poll and then treats the submission as
// finished whether or not the fence was signalled: it frees the
// submission's command buffers while the driver may still be running them,
// and fires buffer-map callbacks over data not yet written. A submission
// that runs longer than 5 s (a cold shader cache makes lavapipe compile
// kernels inside the submission; a long prompt on a slow GPU) then crashes
// the driver or returns wrong numbers (docs/design/backends.md). A
// non-blocking poll reads the fence's own value, so it is exact.
const (
	// spinWait is how long a wait polls back to back (yielding the
	// processor between polls) before it starts to sleep: a decode step on
	// a real GPU finishes within it, so the host reads its result at once.
	spinWait = 4 * time.Millisecond
	// The sleeps between later polls start at minNap and double up to
	// maxNap, so a long wait (kernel compiles, a long prefill) costs
	// little processor time and is noticed within maxNap of its end.
	minNap = 50 * time.Microsecond
	maxNap = 2 * time.Millisecond
)

// waitUntil polls the device until done returns true; queueEmpty is the
// poll's report that no submission is left running.
func (b *Backend) waitUntil(done func(queueEmpty bool) bool) {
	start := time.Now()
	nap := minNap
	for {
		if done(b.dev.Poll(false, nil)) {
			return
		}
		if time.Since(start) < spinWait {
			runtime.Gosched()
			continue
		}
		time.Sleep(nap)
		nap = min(2*nap, maxNap)
	}
}

// waitIdle waits until every submission so far has finished.
func (b *Backend) waitIdle() {
	b.waitUntil(func(queueEmpty bool) bool { return queueEmpty })
}
