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
// first parallel loop; Close stops them. Items are handed out in chunks
// through an atomic counter, so a worker that the OS (or another process)
// slows down takes fewer chunks instead of stalling the loop.
type pool struct {
	threads int

	once  sync.Once
	wake  []chan struct{}
	done  chan struct{}
	quit  atomic.Bool
	alive sync.WaitGroup

	// the current loop
	t       task
	n       int
	grain   int
	next    atomic.Int64
	pending atomic.Int32
}

func newPool(threads int) *pool {
	return &pool{threads: max(1, threads)}
}

func (p *pool) start() {
	p.wake = make([]chan struct{}, p.threads-1)
	p.done = make(chan struct{}, 1)
	for i := range p.wake {
		p.wake[i] = make(chan struct{}, 1)
		p.alive.Add(1)
		go p.worker(i+1, p.wake[i])
	}
}

func (p *pool) worker(w int, wake chan struct{}) {
	defer p.alive.Done()
	for range wake {
		if p.quit.Load() {
			return
		}
		p.chunks(w)
		if p.pending.Add(-1) == 0 {
			p.done <- struct{}{}
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
	// Wake only as many workers as there are chunks beyond the caller's.
	helpers := min(p.threads-1, (n+grain-1)/grain-1)
	p.pending.Store(int32(helpers))
	for i := 0; i < helpers; i++ {
		p.wake[i] <- struct{}{}
	}
	p.chunks(0)
	if helpers > 0 {
		<-p.done
	}
	p.t = nil
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
	for _, c := range p.wake {
		close(c)
	}
	p.alive.Wait()
	p.wake = nil
}
