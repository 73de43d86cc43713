package engine

import (
	"context"
	"time"

	"hearth/engine/sample"
)

// decoder is the decode-step seam: the generation loop (Runner.run) asks it
// for one token at a time and knows nothing of how the token is found.
// Plain greedy decoding on the backend (deviceGreedy) and sampling on the
// host (hostSampler) implement it; batched decoding and speculative
// verification are to be more implementations (docs/design/decode-step.md).
type decoder interface {
	// next returns the next token and, when the request asked for them,
	// its logprobs. more says whether another call may follow, so an
	// implementation that works ahead knows when to stop.
	next(more bool) (int32, *TokenLogprob, error)
	// prefilled is when the prompt's forward pass ended: known once next
	// has returned the first token.
	prefilled() time.Time
	close()
}

// newDecoder starts decoding prompt on seq the way req needs: the backend
// picks each token of a plain greedy request without logprobs or output
// format (the logits stay on the device), the host samples every other
// one, masking what the format refuses.
// seq may already hold the prompt's first tokens (a prompt-cache hit):
// only the rest is prefilled.
// A batched request (Runner.batch, continuous batching) samples on the
// host, its steps taken with the other streams'.
func (r *Runner) newDecoder(ctx context.Context, seq *Sequence, req *Request, prompt []int32, batched bool) (decoder, error) {
	rest := prompt[seq.Len():]
	var mask *masker
	format := req.Format
	if req.ForceTool != nil {
		var err error
		if format, err = r.toolCallFormat(req.ForceTool, req.Tools); err != nil {
			return nil, err
		}
	}
	if format != nil {
		var err error
		if mask, err = r.newMasker(format); err != nil {
			return nil, err
		}
	}
	if !batched && r.draft != nil && mask == nil && req.ThinkingBudget == 0 && (req.Speculative == nil || *req.Speculative) {
		return r.newSpeculative(ctx, seq, req, prompt, r.draft)
	}
	if !batched && req.Sample.PlainGreedy() && !req.Logprobs && mask == nil && req.ThinkingBudget == 0 {
		g, err := seq.Greedy(ctx, rest)
		if err != nil {
			return nil, err
		}
		return &deviceGreedy{g: g}, nil
	}
	logits, err := seq.Forward(ctx, rest, false)
	if err != nil {
		return nil, err
	}
	h := &hostSampler{r: r, ctx: ctx, seq: seq, req: req, sampler: sample.New(req.Sample, prompt),
		mask: mask, logits: logits, last: -1, done: time.Now()}
	if batched {
		h.batch = r.batch
		h.batch.join()
	}
	return h, nil
}

// deviceGreedy is plain greedy decoding on the backend, which queues each
// step one ahead of the loop (Greedy).
type deviceGreedy struct {
	g    *Greedy
	done time.Time
}

func (d *deviceGreedy) next(more bool) (int32, *TokenLogprob, error) {
	id, err := d.g.Next(more)
	if d.done.IsZero() {
		d.done = time.Now() // the first id waited for the prompt's pass
	}
	return id, nil, err
}

func (d *deviceGreedy) prefilled() time.Time { return d.done }
func (d *deviceGreedy) close()               { d.g.Close() }

// hostSampler reads each step's logits back and samples on the host, with
// penalties and logprobs. The forward pass of a token runs only when the
// loop asks for the token after it.
type hostSampler struct {
	r       *Runner
	ctx     context.Context
	seq     *Sequence
	req     *Request
	sampler *sample.Sampler
	mask    *masker   // the request's output format; nil when free
	logits  []float32 // for the next token
	last    int32     // the token whose pass is still to run; -1 when none
	done    time.Time
	batch   *batcher // when set, each pass is a row of a batched step
	forced  []int32  // tokens the next calls return instead of sampling (force)
}

// force makes the next calls return ids, in order, instead of sampled
// tokens (each still runs its pass): how a thinking budget closes the
// thinking.
func (h *hostSampler) force(ids []int32) { h.forced = append(h.forced, ids...) }

func (h *hostSampler) next(bool) (int32, *TokenLogprob, error) {
	if h.last >= 0 {
		var err error
		if h.batch != nil {
			h.logits, err = h.batch.step(h.ctx, h.seq, h.last)
		} else {
			h.logits, err = h.seq.Forward(h.ctx, []int32{h.last}, false)
		}
		if err != nil {
			return 0, nil, err
		}
	}
	var raw []float32
	if h.req.Logprobs {
		raw = append([]float32(nil), h.logits...) // before penalties
	}
	if h.mask != nil {
		if err := h.mask.apply(h.logits); err != nil {
			return 0, nil, err
		}
	}
	var id int32
	if len(h.forced) > 0 {
		id, h.forced = h.forced[0], h.forced[1:]
	} else {
		id = h.sampler.Sample(h.logits)
	}
	if h.mask != nil {
		if err := h.mask.accept(id); err != nil {
			return 0, nil, err
		}
	}
	var lp *TokenLogprob
	if raw != nil {
		lp = h.r.logprob(sample.LogSoftmax(raw, id, h.req.TopLogprobs))
	}
	h.sampler.Accept(id)
	h.last = id
	return id, lp, nil
}

func (h *hostSampler) prefilled() time.Time { return h.done }
func (h *hostSampler) close() {
	if h.batch != nil {
		h.batch.leave()
		h.batch = nil
	}
}
