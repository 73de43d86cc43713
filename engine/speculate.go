package engine

import (
	"context"
	"fmt"
	"time"

	"hearth/engine/cache"
	"hearth/engine/draft"
	"hearth/engine/sample"
)

// speculative is the decoder that drafts: a draft.Source guesses up to k
// tokens, one pass of the target over the newest decided token and the
// guesses gives a row of logits per position, and the guesses stand as
// long as the target agrees (greedy: its argmax; sampling: the lossless
// rejection rule, sample.Verify). The first disagreement is replaced by
// the target's own token, and when every guess stands the last row gives
// one more: a pass decides between 1 and k+1 tokens, and always the tokens
// plain decoding would have (greedy) or tokens of the same distribution
// (sampling). The caches are rolled back past the rejected guesses.
//
// docs/design/speculative.md has the rules for k and the rollback.
type speculative struct {
	r       *Runner
	ctx     context.Context
	seq     *Sequence
	req     *Request
	src     draft.Source
	sampler *sample.Sampler // nil: greedy, with argmax on the backend
	history []int32         // the prompt and every decided token
	ready   []decided       // decided tokens not yet returned, oldest first
	last    int32           // the newest decided token: not yet in the caches
	replay  bool            // a cache holds recurrent state: rewinding replays
	k       int             // draft length, adapted to the acceptance
	rate    float64         // running share of drafted tokens accepted
	pause   int             // passes left without drafting, after drafts stopped paying
	stats   SpecStats
	done    time.Time
}

type decided struct {
	id int32
	lp *TokenLogprob
}

// SpecStats counts one request's speculation.
type SpecStats struct {
	Passes   int // target passes after the prompt
	Drafted  int // tokens proposed
	Accepted int // of which the target kept
}

// Draft lengths: k starts at specStartK and moves within [1, specMaxK].
// Below specMinRate of drafted tokens accepted, drafting pauses for
// specPause passes: guesses that keep failing only cost.
const (
	specStartK  = 4
	specMaxK    = 8
	specMinRate = 0.25
	specPause   = 16
)

func (r *Runner) newSpeculative(ctx context.Context, seq *Sequence, req *Request, prompt []int32, src draft.Source) (*speculative, error) {
	sp := &speculative{r: r, ctx: ctx, seq: seq, req: req, src: src, k: specStartK, rate: 1,
		history: append([]int32(nil), prompt...)}
	for _, c := range seq.caches {
		if _, ok := c.(*cache.State); ok {
			sp.replay = true
		}
	}
	var first decided
	if req.Sample.PlainGreedy() && !req.Logprobs {
		id, err := seq.ForwardArgmax(ctx, prompt[seq.Len():])
		if err != nil {
			return nil, err
		}
		first.id = id
	} else {
		sp.sampler = sample.New(req.Sample, prompt)
		logits, err := seq.Forward(ctx, prompt[seq.Len():], false)
		if err != nil {
			return nil, err
		}
		first = sp.sample(logits)
	}
	sp.done = time.Now()
	sp.decide(first)
	return sp, nil
}

// sample picks a token from one row of logits the way hostSampler does.
func (sp *speculative) sample(row []float32) decided {
	var raw []float32
	if sp.req.Logprobs {
		raw = append([]float32(nil), row...) // before penalties
	}
	id := sp.sampler.Sample(row)
	sp.sampler.Accept(id)
	return decided{id, sp.logprob(raw, id)}
}

func (sp *speculative) logprob(raw []float32, id int32) *TokenLogprob {
	if raw == nil {
		return nil
	}
	return sp.r.logprob(sample.LogSoftmax(raw, id, sp.req.TopLogprobs))
}

func (sp *speculative) decide(d decided) {
	sp.ready = append(sp.ready, d)
	sp.history = append(sp.history, d.id)
	sp.last = d.id
}

func (sp *speculative) next(more bool) (int32, *TokenLogprob, error) {
	if len(sp.ready) == 0 {
		if err := sp.pass(more); err != nil {
			return 0, nil, err
		}
	}
	d := sp.ready[0]
	sp.ready = sp.ready[1:]
	return d.id, d.lp, nil
}

// pass runs the target once over the newest decided token and a draft.
func (sp *speculative) pass(more bool) error {
	var drafts []int32
	// A pass fits in the context and in one chunk: a sliding-window
	// cache can drop at most a chunk's worth of its newest tokens. It
	// does not straddle a LongRoPE switch either, where it would rotate
	// the positions before the switch with the long table.
	room := min(sp.seq.cap-sp.seq.Len(), sp.seq.m.chunk) - 1
	if rs, ok := sp.seq.m.impl.(interface{ RopeSwitch() int }); ok {
		if at, pos := rs.RopeSwitch(), sp.seq.Len(); pos < at {
			room = min(room, at-pos-1)
		}
	}
	switch {
	case !more || room <= 0:
	case sp.pause > 0:
		sp.pause--
	default:
		drafts = sp.src.Draft(sp.history, min(sp.k, room))
	}
	in := append([]int32{sp.last}, drafts...)
	rows, err := sp.seq.forward(sp.ctx, in, true, sp.sampler == nil)
	if err != nil {
		return err
	}
	vocab := len(rows) / len(in)
	accepted := 0
	for i := 0; i <= len(drafts); i++ {
		row := rows[i*vocab : (i+1)*vocab]
		var d decided
		ok := false
		switch {
		case sp.sampler == nil:
			d.id = int32(row[0])
			ok = i < len(drafts) && d.id == drafts[i]
		case i < len(drafts):
			var raw []float32
			if sp.req.Logprobs {
				raw = append([]float32(nil), row...)
			}
			d.id, ok = sp.sampler.Verify(row, drafts[i])
			sp.sampler.Accept(d.id)
			d.lp = sp.logprob(raw, d.id)
		default:
			d = sp.sample(row)
		}
		sp.decide(d)
		if !ok {
			break
		}
		accepted++
	}
	sp.stats.Passes++
	sp.stats.Drafted += len(drafts)
	sp.stats.Accepted += accepted
	if err := sp.rewind(in, 1+accepted); err != nil {
		return err
	}
	sp.adapt(len(drafts), accepted)
	return nil
}

// rewind leaves the caches holding in[:keep] of the in they were just
// given. Attention caches drop the rest; a recurrent state cannot drop
// part of a pass, so it goes back to before the pass (a slot it keeps)
// and the kept tokens run again.
func (sp *speculative) rewind(in []int32, keep int) error {
	drop := len(in) - keep
	if drop == 0 {
		return nil
	}
	if !sp.replay {
		for _, c := range sp.seq.caches {
			if got := c.Trim(drop); got != drop {
				return fmt.Errorf("speculative decoding: a cache dropped %d of %d rejected tokens", got, drop)
			}
		}
		return nil
	}
	sp.seq.Trim(len(in))
	_, err := sp.seq.forward(sp.ctx, in[:keep], false, true)
	return err
}

// adapt moves k toward the run of tokens the target keeps accepting.
func (sp *speculative) adapt(drafted, accepted int) {
	if drafted == 0 {
		return
	}
	sp.rate = 0.7*sp.rate + 0.3*float64(accepted)/float64(drafted)
	switch {
	case accepted == drafted:
		sp.k = min(sp.k+2, specMaxK)
	default:
		sp.k = max(accepted+1, sp.k-1, 1)
	}
	if sp.rate < specMinRate {
		sp.pause, sp.rate, sp.k = specPause, 1, specStartK
	}
}

func (sp *speculative) prefilled() time.Time { return sp.done }
func (sp *speculative) close()               {}
