package cpu

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"time"

	"hearth/engine/tensor"
)

// Profile is an optional per-node timer (a diagnostic, off by default):
// while a backend has one, Run records the wall time of every node by op
// kind and, for matmuls, by weight shape, with the bytes each one reads;
// the pool records how long its loops take, how long the caller waits for
// the other threads after its own last chunk (the loop's tail), and how
// long a posted loop waits before each worker starts on it (wake-up).
// Without one, the cost is a nil check per node and per loop.
type Profile struct {
	Runs    int
	RunTime time.Duration // wall time inside Run
	Nodes   map[ProfileKey]*ProfileEntry

	Loops     int           // parallel loops dispatched to the pool
	LoopTime  time.Duration // wall time inside those loops
	Tail      time.Duration // caller waiting for workers after its last chunk
	Wake      time.Duration // post → worker's first look at the loop, summed over workers
	WakeMax   time.Duration // the longest single wake-up
	Parked    int           // loops a worker had to be woken for (it was parked)
	CallerRun time.Duration // caller's own chunk time inside loops
	Gap       time.Duration // between one loop's end and the next one's post, within a run
}

// ProfileKey names a class of nodes: the op and, for matmuls, the fused
// group's total rows, input width, rows of input and weight format.
type ProfileKey struct {
	Op     string
	Rows   int // total weight rows (fused group), matmuls only
	Cols   int
	M      int // input rows
	Format string
}

// ProfileEntry is the total for one key.
type ProfileEntry struct {
	Count int
	Time  time.Duration
	Bytes int64 // weight bytes read (matmuls)
}

// profiling state of a run, held by the backend and its pool
type poolProf struct {
	posted    atomic.Int64 // when the current loop was posted (monoNow)
	wakeSum   atomic.Int64
	wakeMax   atomic.Int64
	parked    atomic.Int64
	loops     int
	lastEnd   int64 // when the previous loop ended
	gap       time.Duration
	loopTime  time.Duration
	tail      time.Duration
	callerRun time.Duration
}

var nextProfile atomic.Pointer[Profile]

// ProfileNextBackend makes the next backend New creates record into p
// (once; later backends are not profiled). It is how a caller that builds
// the backend through engine.Load profiles the real decode path.
func ProfileNextBackend(p *Profile) { nextProfile.Store(p) }

// SetProfile makes b record into p from its next Run (nil stops it).
func (b *Backend) SetProfile(p *Profile) {
	b.prof = p
	if p == nil {
		b.pool.prof = nil
		return
	}
	if p.Nodes == nil {
		p.Nodes = map[ProfileKey]*ProfileEntry{}
	}
	b.pool.prof = &poolProf{}
}

// profNode adds node i's time to the profile.
func (b *Backend) profNode(g *tensor.Graph, i int, d time.Duration) {
	n := &g.Nodes[i]
	if n.Op == tensor.OpMatMul && b.cur.slots[i].kind == slotFused {
		return
	}
	key := ProfileKey{Op: n.Op.String()}
	var bytes int64
	if n.Op == tensor.OpMatMul {
		ws := g.Shape(n.In[1])
		key.Cols = ws[1]
		key.M = len(b.f32(n.In[0])) / ws[1]
		add := func(j int) {
			w := g.Nodes[j].In[1]
			key.Rows += g.Shape(w)[0]
			if bi := w.Buffer(); bi >= 0 && b.bufs[bi].m != nil {
				m := b.bufs[bi].m
				bytes += int64(m.bytes())
				if m.quant {
					key.Format = fmt.Sprintf("q%dg%d", m.bits, m.group)
				} else {
					key.Format = "dense"
				}
			}
		}
		add(i)
		for _, j := range b.cur.fused[i] {
			add(j)
		}
		if b.int8 && key.M < gemmMinRows {
			key.Format += "/i8"
		}
	}
	e := b.prof.Nodes[key]
	if e == nil {
		e = &ProfileEntry{}
		b.prof.Nodes[key] = e
	}
	e.Count++
	e.Time += d
	e.Bytes += bytes
}

// profFinish moves the pool's counters into the profile.
func (b *Backend) profFinish(d time.Duration) {
	pp := b.pool.prof
	b.prof.Add(&Profile{
		Runs: 1, RunTime: d,
		Loops: pp.loops, LoopTime: pp.loopTime, Tail: pp.tail, Gap: pp.gap, CallerRun: pp.callerRun,
		Wake:    time.Duration(pp.wakeSum.Swap(0)),
		WakeMax: time.Duration(pp.wakeMax.Swap(0)),
		Parked:  int(pp.parked.Swap(0)),
	})
	pp.loops, pp.loopTime, pp.tail, pp.callerRun, pp.gap = 0, 0, 0, 0, 0
}

// Write prints the profile per run: one line per key, slowest first, with
// each matmul's rate in GB/s of weights, then the pool's totals.
func (p *Profile) Write(w io.Writer) {
	if p.Runs == 0 {
		fmt.Fprintln(w, "no runs profiled")
		return
	}
	runs := float64(p.Runs)
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / runs }
	keys := make([]ProfileKey, 0, len(p.Nodes))
	var nodes time.Duration
	for k, e := range p.Nodes {
		keys = append(keys, k)
		nodes += e.Time
	}
	slices.SortFunc(keys, func(a, b ProfileKey) int { return cmp.Compare(p.Nodes[b].Time, p.Nodes[a].Time) })
	fmt.Fprintf(w, "per run (%d runs): %.0f µs in Run, %.0f µs in nodes\n", p.Runs, us(p.RunTime), us(nodes))
	fmt.Fprintf(w, "%-12s %-10s %12s %5s %9s %6s %8s\n", "op", "format", "rows×k", "n/run", "µs/run", "%", "GB/s")
	for _, k := range keys {
		e := p.Nodes[k]
		shape := ""
		if k.Rows > 0 {
			shape = fmt.Sprintf("%d×%d", k.Rows, k.Cols)
		}
		gbs := ""
		if e.Bytes > 0 {
			gbs = fmt.Sprintf("%.1f", float64(e.Bytes)/e.Time.Seconds()/1e9)
		}
		fmt.Fprintf(w, "%-12s %-10s %12s %5.0f %9.0f %5.1f%% %8s\n", k.Op, k.Format, shape, float64(e.Count)/runs, us(e.Time), 100*float64(e.Time)/float64(p.RunTime), gbs)
	}
	fmt.Fprintf(w, "pool: %.0f loops/run, %.0f µs/run in loops, caller's chunks %.0f µs, tail (caller waits) %.0f µs, wake-ups %.1f µs/loop/worker (max %.0f µs), %.1f parked wake-ups/run, %.0f µs/run between loops\n",
		float64(p.Loops)/runs, us(p.LoopTime), us(p.CallerRun), us(p.Tail), float64(p.Wake.Microseconds())/max(1, float64(p.Loops)), float64(p.WakeMax.Microseconds()), float64(p.Parked)/runs, us(p.Gap))
}

// woke records a worker's delay from a loop's posting to its first look.
func (pp *poolProf) woke(slept bool) {
	d := monoNow() - pp.posted.Load()
	pp.wakeSum.Add(d)
	for m := pp.wakeMax.Load(); d > m && !pp.wakeMax.CompareAndSwap(m, d); m = pp.wakeMax.Load() {
	}
	if slept {
		pp.parked.Add(1)
	}
}

// loop records one loop on the caller: posted at t0, its own chunks done
// at t1, every worker done at t2.
func (pp *poolProf) loop(t0, t1, t2 int64) {
	if pp.loops > 0 {
		pp.gap += time.Duration(t0 - pp.lastEnd)
	}
	pp.lastEnd = t2
	pp.loops++
	pp.loopTime += time.Duration(t2 - t0)
	pp.callerRun += time.Duration(t1 - t0)
	pp.tail += time.Duration(t2 - t1)
}

// Add adds q's totals to p.
func (p *Profile) Add(q *Profile) {
	if p.Nodes == nil {
		p.Nodes = map[ProfileKey]*ProfileEntry{}
	}
	for k, e := range q.Nodes {
		pe := p.Nodes[k]
		if pe == nil {
			pe = &ProfileEntry{}
			p.Nodes[k] = pe
		}
		pe.Count += e.Count
		pe.Time += e.Time
		pe.Bytes += e.Bytes
	}
	p.Runs += q.Runs
	p.RunTime += q.RunTime
	p.Loops += q.Loops
	p.LoopTime += q.LoopTime
	p.Tail += q.Tail
	p.Wake += q.Wake
	p.WakeMax = max(p.WakeMax, q.WakeMax)
	p.Parked += q.Parked
	p.CallerRun += q.CallerRun
	p.Gap += q.Gap
}

// Reset clears the totals (to skip warm-up runs).
func (p *Profile) Reset() {
	nodes := p.Nodes
	clear(nodes)
	*p = Profile{Nodes: nodes}
}
