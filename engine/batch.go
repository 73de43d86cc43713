package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"hearth/engine/family"
	"hearth/engine/tensor"
)

// Continuous batching (docs/design/batching.md): a runner with Parallel > 1
// runs several plain text requests at once, each on its own goroutine and
// sequence. Their prompts prefill one chunk at a time between steps; their
// decode steps go through one batcher, which runs every stream's next
// token in one pass (family.BatchModel), so the weights are read once a
// step for all of them. A stream joins when its prompt is in and leaves
// when it ends or its client goes, without stalling the others.

// CanBatch reports whether the model's family runs batched steps.
func (m *Model) CanBatch() bool {
	_, ok := m.impl.(family.BatchModel)
	return ok
}

// ForwardBatch appends tokens[i] to seqs[i], all in one pass, and returns
// each one's logits ([vocab] each). On error every sequence is left as it
// was.
func (m *Model) ForwardBatch(ctx context.Context, seqs []*Sequence, tokens []int32) ([][]float32, error) {
	bm, ok := m.impl.(family.BatchModel)
	if !ok {
		return nil, fmt.Errorf("family %s runs no batched steps", m.Family.Name)
	}
	if len(seqs) != len(tokens) || len(seqs) == 0 {
		return nil, fmt.Errorf("a batched step of %d sequences and %d tokens", len(seqs), len(tokens))
	}
	rows := make([]family.Row, len(seqs))
	for i, s := range seqs {
		if s.m != m {
			return nil, fmt.Errorf("row %d: a sequence of another model", i)
		}
		if s.Len()+1 > s.cap {
			return nil, fmt.Errorf("row %d: %d tokens held + 1 exceed the context of %d", i, s.Len(), s.cap)
		}
		if len(s.media) > 0 {
			return nil, fmt.Errorf("row %d: a sequence with media runs alone", i)
		}
		rows[i] = family.Row{Token: tokens[i], Pos: s.Len(), Caches: s.caches}
	}
	m.pass.Lock()
	defer m.pass.Unlock()
	g := tensor.NewGraph(m.backend)
	res, err := bm.ForwardBatch(g, rows)
	if err == nil {
		err = m.backend.Run(ctx, g, res)
	}
	if err != nil {
		for i, s := range seqs {
			s.Trim(s.Len() - rows[i].Pos)
		}
		return nil, err
	}
	flat := make([]float32, tensor.Elements(g.Shape(res)))
	if err := m.backend.Read(res, flat); err != nil {
		return nil, err
	}
	vocab := len(flat) / len(seqs)
	out := make([][]float32, len(seqs))
	for i := range out {
		out[i] = flat[i*vocab : (i+1)*vocab : (i+1)*vocab]
	}
	return out, nil
}

// batcher gathers the decode steps of a runner's streams into batched
// passes. A stream is a member from its first step to close; a pass runs
// when every member has asked for its step, or a short grace after the
// first ask (a member busy elsewhere, say with a slow client, is not
// waited for longer: it joins the next pass).
type batcher struct {
	m *Model

	mu      sync.Mutex
	members int
	queue   []*step
	arrived chan struct{} // a step was queued or a member left
	stop    chan struct{}
	done    chan struct{}

	// last is how long the last pass took, which sizes the grace.
	last time.Duration
	// passes and rows count the batched passes run and the rows they
	// carried: rows/passes is the mean batch size.
	passes, rows atomic.Int64
	lastRows     atomic.Int64 // rows of the last pass
}

type step struct {
	ctx    context.Context
	seq    *Sequence
	token  int32
	logits []float32
	err    error
	done   chan struct{}
}

func newBatcher(m *Model) *batcher {
	b := &batcher{m: m, arrived: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

// join makes the caller a member until leave.
func (b *batcher) join() {
	b.mu.Lock()
	b.members++
	b.mu.Unlock()
}

func (b *batcher) leave() {
	b.mu.Lock()
	b.members--
	b.mu.Unlock()
	b.signal()
}

func (b *batcher) signal() {
	select {
	case b.arrived <- struct{}{}:
	default:
	}
}

// errBatcherClosed ends the steps of streams still running at close.
var errBatcherClosed = errors.New("the model is being unloaded")

// step runs token through seq in the next batched pass and returns its
// logits.
func (b *batcher) step(ctx context.Context, seq *Sequence, token int32) ([]float32, error) {
	s := &step{ctx: ctx, seq: seq, token: token, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, s)
	b.mu.Unlock()
	b.signal()
	select {
	case <-s.done:
		return s.logits, s.err
	case <-b.done:
		return nil, errBatcherClosed
	}
}

// close stops the loop; steps still queued fail.
func (b *batcher) close() {
	close(b.stop)
	<-b.done
}

// Grace bounds: a pass waits at least minGrace and at most maxGrace for
// members still to ask, a quarter of the last pass's time in between.
const (
	minGrace = time.Millisecond
	maxGrace = 10 * time.Millisecond
)

func (b *batcher) loop() {
	defer close(b.done)
	for {
		select {
		case <-b.stop:
			return
		case <-b.arrived:
		}
		steps := b.gather()
		if steps == nil {
			continue
		}
		b.run(steps)
	}
}

// gather waits until every member has a step queued, or the grace after
// the first one is over, and takes the queue.
func (b *batcher) gather() []*step {
	var deadline <-chan time.Time
	for {
		b.mu.Lock()
		n, members := len(b.queue), b.members
		b.mu.Unlock()
		if n == 0 {
			return nil
		}
		if n >= members {
			break
		}
		if deadline == nil {
			deadline = time.After(min(maxGrace, max(minGrace, b.last/4)))
		}
		select {
		case <-b.arrived:
			continue
		case <-deadline:
		case <-b.stop:
			return nil
		}
		break
	}
	b.mu.Lock()
	steps := b.queue
	b.queue = nil
	b.mu.Unlock()
	return steps
}

// run passes the steps whose requests are still wanted and hands each its
// logits.
func (b *batcher) run(steps []*step) {
	live := steps[:0]
	for _, s := range steps {
		if err := s.ctx.Err(); err != nil {
			s.err = err
			close(s.done)
			continue
		}
		live = append(live, s)
	}
	if len(live) == 0 {
		return
	}
	seqs := make([]*Sequence, len(live))
	tokens := make([]int32, len(live))
	for i, s := range live {
		seqs[i], tokens[i] = s.seq, s.token
	}
	// A pass is cancelled only when every request in it is: one client
	// leaving must not fail the others' step.
	ctx, cancel := allDone(live)
	t0 := time.Now()
	logits, err := b.m.ForwardBatch(ctx, seqs, tokens)
	cancel()
	b.last = time.Since(t0)
	b.passes.Add(1)
	b.rows.Add(int64(len(live)))
	b.lastRows.Store(int64(len(live)))
	for i, s := range live {
		if err != nil {
			s.err = err
		} else {
			s.logits = logits[i]
		}
		close(s.done)
	}
}

// allDone is a context cancelled once every step's context is.
func allDone(steps []*step) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for _, s := range steps {
			select {
			case <-s.ctx.Done():
			case <-ctx.Done():
				return
			}
		}
		cancel()
	}()
	return ctx, cancel
}

// BatchStats are the runner's batched passes, the rows they carried
// (rows/passes is the mean batch size) and the rows of the last one;
// zero when the runner does not batch.
func (r *Runner) BatchStats() (passes, rows, last int64) {
	if r.batch == nil {
		return 0, 0, 0
	}
	return r.batch.passes.Load(), r.batch.rows.Load(), r.batch.lastRows.Load()
}
