package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"hearth/engine/tensor"
)

// Greedy is a greedy decode of one sequence. Where the backend queues work
// (tensor.Pipeliner: the GPU), it keeps the device one step ahead of the
// caller: each step stores its token in a one-element buffer on the device,
// and the next step, which embeds that buffer, is queued before the token
// is read. Building and submitting a step then overlaps the device's work
// on the one before. A step queued past the caller's last token (an end of
// sequence it could not foresee) is dropped from the sequence by Close.
//
// On other backends, or with Options.Unpipelined, each Next runs one step
// and reads its token, as Sequence.ForwardArgmax does.
type Greedy struct {
	s     *Sequence
	ctx   context.Context
	pipe  tensor.Pipeliner // nil: one step at a time
	tok   tensor.T         // [1] the last step's token, on the device
	queue []queued         // started steps not yet read, oldest first
	next  int32            // without pipe: the last token picked
	ran   bool             // without pipe: next was returned
	err   error
	times HostTimes
}

// HostTimes is where the host's time went in Next, with a backend that
// runs ahead: building and queueing steps (the work that overlaps the
// device, as long as it takes less than a step's device time), and waiting
// for tokens.
type HostTimes struct {
	Steps int           // steps queued by Next
	Queue time.Duration // recording the steps' graphs and starting them
	Wait  time.Duration // reading tokens: the device's time not overlapped
}

type queued struct {
	run  tensor.Pending
	out  tensor.T
	keep int // the sequence's length once this step is dropped unread
}

// Greedy starts a greedy decode after prompt: it runs (or queues) the
// prompt. Next returns the tokens; Close must be called.
func (s *Sequence) Greedy(ctx context.Context, prompt []int32) (*Greedy, error) {
	gr := &Greedy{s: s, ctx: ctx}
	p, ok := s.m.backend.(tensor.Pipeliner)
	if !ok || s.m.sync {
		id, err := s.ForwardArgmax(ctx, prompt)
		if err != nil {
			return nil, err
		}
		gr.next = id
		return gr, nil
	}
	tok, err := s.m.backend.Alloc([]int{1})
	if err != nil {
		return nil, err
	}
	gr.pipe, gr.tok = p, tok
	start := s.Len()
	// every chunk but the last runs at once (4 bytes come back); the last
	// is queued and picks the token
	last := s.lastChunk(prompt)
	if last > 0 {
		if _, err := s.ForwardArgmax(ctx, prompt[:last]); err != nil {
			s.m.backend.Free(tok)
			return nil, err
		}
	}
	if err := gr.start(prompt[last:], tensor.T{}); err != nil {
		s.Trim(s.Len() - start)
		s.m.backend.Free(tok)
		return nil, err
	}
	gr.queue[0].keep = s.Len() // the prompt stays, read or not
	return gr, nil
}

// start queues one pass over tokens (or, with ids set, over the token on
// the device) that stores its greedy token in gr.tok.
func (gr *Greedy) start(tokens []int32, ids tensor.T) error {
	s := gr.s
	if len(tokens) == 0 {
		return errors.New("greedy: no tokens")
	}
	if s.Len()+len(tokens) > s.cap {
		return fmt.Errorf("greedy: %d tokens held + %d new exceed the context of %d", s.Len(), len(tokens), s.cap)
	}
	g := tensor.NewGraph(s.m.backend)
	before := s.Len()
	b, err := s.batch(g, tokens, ids)
	var res tensor.T
	if err == nil {
		res, err = s.m.impl.Forward(g, b)
	}
	if err == nil {
		best := g.Reshape(g.Argmax(res), 1)
		g.Store(gr.tok, best, 0)
		var run tensor.Pending
		if run, err = gr.pipe.Start(gr.ctx, g, best); err == nil {
			gr.queue = append(gr.queue, queued{run: run, out: best, keep: before})
			return nil
		}
	}
	s.Trim(s.Len() - before)
	return err
}

// Next returns the next token. With more, the step after it is queued
// before this token is read (fed on the device), so pass more whenever
// another token may be wanted after this one; after Next(false) the decode
// is over.
func (gr *Greedy) Next(more bool) (int32, error) {
	if gr.err != nil {
		return 0, gr.err
	}
	if gr.pipe == nil {
		id := gr.next
		if gr.ran {
			if id, gr.err = gr.s.ForwardArgmax(gr.ctx, []int32{gr.next}); gr.err != nil {
				return 0, gr.err
			}
			gr.next = id
		}
		gr.ran = true
		if !more {
			gr.err = errDone
		}
		return id, nil
	}
	if len(gr.queue) == 0 {
		return 0, errDone
	}
	t0 := time.Now()
	if more {
		if gr.err = gr.start(make([]int32, 1), gr.tok); gr.err != nil {
			return 0, gr.err
		}
		gr.times.Steps++
	}
	t1 := time.Now()
	q := gr.queue[0]
	var v [1]float32
	if gr.err = q.run.Read(q.out, v[:]); gr.err != nil {
		return 0, gr.err // q stays queued: Close drops it
	}
	gr.queue = gr.queue[1:]
	gr.times.Queue += t1.Sub(t0)
	gr.times.Wait += time.Since(t1)
	return int32(v[0]), nil
}

// HostTimes reports where Next's time went so far (zero where the backend
// does not run ahead: there a step's time is all the backend's Run).
func (gr *Greedy) HostTimes() HostTimes { return gr.times }

var (
	errDone   = errors.New("greedy: Next after Next(false)")
	errClosed = errors.New("greedy: Next after Close")
)

// Close waits for the steps queued past the last token read, drops them
// from the sequence (their tokens were never returned; a decode step whose
// read failed is dropped too, the prompt stays) and frees the device
// buffer. The sequence then holds the prompt and every token Next returned
// but the last, as after a ForwardArgmax loop, also after an error. Next
// fails after Close.
func (gr *Greedy) Close() {
	if gr.err == nil || gr.err == errDone {
		gr.err = errClosed
	}
	if gr.pipe == nil {
		return
	}
	for _, q := range gr.queue {
		var v [1]float32
		_ = q.run.Read(q.out, v[:]) // only waits: its token is dropped
	}
	if len(gr.queue) > 0 {
		gr.s.Trim(gr.s.Len() - gr.queue[0].keep)
	}
	gr.queue = nil
	gr.s.m.backend.Free(gr.tok)
	gr.pipe = nil
}
