package cpu

import (
	"sync"
	"sync/atomic"
	"time"
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
// gaps: after a loop, workers (and the caller, waiting for them) spin on
// the loop generation for spinFor before they park on a channel.
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

	prof *poolProf // Profile's counters, or nil
}

// spinFor is how long a waiting thread spins before it parks. It covers
// a decode step's gaps between loops and the engine's work between steps
// (a few hundred µs): a parked worker takes long to wake (a futex wake-up
// and the Go scheduler handing it a P: about 100 µs on the VM of
// docs/benchmarks.md, more under load), and with the few tens of
// microseconds it spun before, it parked before almost every loop of a
// step, so the caller did much of each loop alone. Past yieldAfter the
// spin yields the CPU at every look, so on a machine shared with other
// processes it does not keep the thread it waits for off the CPU (without
// that, a 2 ms spin made contended decode steps several times slower).
const spinFor = time.Millisecond

// spinning reports whether a thread that began waiting at start (a
// monoNow time) should keep spinning; it reads the clock only every 256th
// call (i counts them). After yieldAfter it yields the CPU at each of
// those reads, so a spinning thread does not hold the CPU that the thread
// it waits for (descheduled by the OS for another process) needs.
func spinning(i int, start *int64) bool {
	if i&255 != 0 {
		return true
	}
	now := monoNow()
	if i == 0 {
		*start = now
		return true
	}
	if now-*start >= int64(yieldAfter) {
		osYield()
	}
	return now-*start < int64(spinFor)
}

// yieldAfter is how long a waiting thread spins before it starts to yield
// between looks: longer than the usual gap between two loops of a step.
const yieldAfter = 50 * time.Microsecond

var monoBase = time.Now()

func monoNow() int64 { return int64(time.Since(monoBase)) }

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
		slept := false
		var since int64
		for i := 0; p.gen.Load() == seen; i++ {
			if spinning(i, &since) {
				continue
			}
			// Park. Announce it first and look again, so a loop posted in
			// between is either seen here or finds the flag and sends a
			// token (atomics are sequentially consistent).
			p.parked[w].Store(true)
			if p.gen.Load() == seen {
				<-p.wake[w]
				slept = true
			}
			p.parked[w].Store(false)
			i = -1 // spin afresh
		}
		seen = p.gen.Load()
		if p.quit.Load() {
			return
		}
		if pp := p.prof; pp != nil {
			pp.woke(slept)
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
	var t0, t1 int64
	pp := p.prof
	if pp != nil {
		t0 = monoNow()
		pp.posted.Store(t0)
	}
	p.gen.Add(1) // publishes the fields above
	p.rouse()
	p.chunks(0)
	if pp != nil {
		t1 = monoNow()
	}
	var since int64
	for i := 0; p.pending.Load() != 0; i++ {
		if spinning(i, &since) {
			continue
		}
		p.wait.Store(true)
		if p.pending.Load() != 0 {
			<-p.done
		}
		p.wait.Store(false)
		i = -1 // spin afresh
	}
	if pp != nil {
		pp.loop(t0, t1, monoNow())
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
