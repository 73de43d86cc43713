package cpu

import (
	"sync"
	"sync/atomic"
)

// task is one parallel loop body: run handles items [lo, hi) on worker w
// (0 ≤ w < threads; w picks the worker's scratch). Tasks are pointers to
// structs the backend owns, so dispatching one allocates nothing.
type task interface {
	run(w, lo, hi int)
}

// pool is a persistent set of worker goroutines. The calling goroutine
// works too, as worker 0, so threads-1 goroutines are started, once, on the
// first parallel loop; close stops them. Items are handed out in chunks
// through an atomic counter, so a worker that the OS (or another process)
// slows down takes fewer chunks instead of stalling the loop.
//
// A decode step is a few hundred short loops with a little serial work in
// between, so waking a parked thread for each would cost more than the
// gaps: after a loop, workers (and the caller, waiting for them) spin for a
// few tens of microseconds on the loop generation before they park on a
// channel.
type pool struct {
	threads int

	once   sync.Once
	wake   []chan struct{} // per worker; a token wakes it when parked
	parked []atomic.Bool   // per worker: parked, or about to park
	done   chan struct{}   // a token wakes the caller when it waits
	wait   atomic.Bool     // the caller is parked, or about to park
	gen    atomic.Uint64   // loop generation: a new loop is ready
	quit   atomic.Bool
	alive  sync.WaitGroup

	// the current loop
	t       task
	n       int
	grain   int
	next    atomic.Int64
	pending atomic.Int32 // workers still in the loop
}

// spinIters is how many times a waiting thread checks before it parks
// (tens of microseconds).
const spinIters = 1 << 15

func newPool(threads int) *pool {
	return &pool{threads: max(1, threads)}
}

func (p *pool) start() {
	p.wake = make([]chan struct{}, p.threads)
	p.parked = make([]atomic.Bool, p.threads)
	p.done = make(chan struct{}, 1)
	for w := 1; w < p.threads; w++ {
		p.wake[w] = make(chan struct{}, 1)
		p.alive.Add(1)
		go p.worker(w)
	}
}

func (p *pool) worker(w int) {
	defer p.alive.Done()
	var seen uint64
	for {
		for i := 0; p.gen.Load() == seen; i++ {
			if i < spinIters {
				continue
			}
			// Park. Announce it first and look again, so a loop posted in
			// between is either seen here or finds the flag and sends a
			// token (atomics are sequentially consistent).
			p.parked[w].Store(true)
			if p.gen.Load() == seen {
				<-p.wake[w]
			}
			p.parked[w].Store(false)
			i = 0
		}
		seen = p.gen.Load()
		if p.quit.Load() {
			return
		}
		p.chunks(w)
		if p.pending.Add(-1) == 0 && p.wait.Load() {
			select {
			case p.done <- struct{}{}:
			default: // a stale token is there; the caller rechecks
			}
		}
	}
}

// chunks takes chunks of the current loop until none are left.
func (p *pool) chunks(w int) {
	for {
		lo := int(p.next.Add(int64(p.grain))) - p.grain
		if lo >= p.n {
			return
		}
		p.t.run(w, lo, min(lo+p.grain, p.n))
	}
}

// parallel runs t over [0, n) in chunks of grain items (at least 1). With
// one thread, or when n fits in one chunk, it runs inline.
func (p *pool) parallel(n, grain int, t task) {
	if n <= 0 {
		return
	}
	grain = max(1, grain)
	if p.threads == 1 || n <= grain {
		t.run(0, 0, n)
		return
	}
	p.once.Do(p.start)
	p.t, p.n, p.grain = t, n, grain
	p.next.Store(0)
	p.pending.Store(int32(p.threads - 1))
	p.gen.Add(1) // publishes the fields above
	p.rouse()
	p.chunks(0)
	for i := 0; p.pending.Load() != 0; i++ {
		if i < spinIters {
			continue
		}
		p.wait.Store(true)
		if p.pending.Load() != 0 {
			<-p.done
		}
		p.wait.Store(false)
		i = 0
	}
	p.t = nil
}

// rouse sends a token to every parked worker.
func (p *pool) rouse() {
	for w := 1; w < p.threads; w++ {
		if p.parked[w].Load() {
			select {
			case p.wake[w] <- struct{}{}:
			default: // it has a token already
			}
		}
	}
}

// grainFor picks a chunk size that gives each thread about perThread
// chunks of n items, rounded up to a multiple of align.
func (p *pool) grainFor(n, perThread, align int) int {
	g := (n + p.threads*perThread - 1) / (p.threads * perThread)
	g = (g + align - 1) / align * align
	return max(g, align)
}

// close stops the workers.
func (p *pool) close() {
	if p.wake == nil {
		return
	}
	p.quit.Store(true)
	p.gen.Add(1)
	for w := 1; w < p.threads; w++ {
		select {
		case p.wake[w] <- struct{}{}:
		default:
		}
	}
	p.alive.Wait()
	p.wake = nil
}
