package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"time"

	"hearth/engine/reasoning"
	"hearth/engine/sample"
	"hearth/engine/toolcall"
)

// prompt turns the request into token ids, with where each of its
// pictures' and clips' soft tokens start.
func (r *Runner) prompt(ctx context.Context, req *Request) (*Placed, error) {
	if (len(req.Images) > 0 || len(req.Videos) > 0) && r.imgProc == nil {
		what := "images"
		if len(req.Images) == 0 {
			what = "video"
		}
		if r.visionErr != nil {
			return nil, &RequestError{fmt.Errorf("model %q takes no %s: its vision tower loaded, but not its image processor: %w", r.id, what, r.visionErr)}
		}
		return nil, &RequestError{fmt.Errorf("model %q takes no %s", r.id, what)}
	}
	if req.PromptIDs == nil {
		return r.Prompter().PromptMedia(ctx, req)
	}
	if len(req.Images) > 0 || len(req.Videos) > 0 {
		return nil, &RequestError{fmt.Errorf("images and video go in messages, as media parts; model %q got %d with prompt ids", r.id, len(req.Images)+len(req.Videos))}
	}
	if len(req.Audio) > 0 {
		return nil, &RequestError{fmt.Errorf("audio goes in messages, as input_audio parts; model %q got %d clips with prompt ids", r.id, len(req.Audio))}
	}
	for _, id := range req.PromptIDs {
		if id < 0 || int(id) >= r.model.Checkpoint.Config.VocabSize {
			return nil, &RequestError{fmt.Errorf("token id %d is outside the vocabulary [0, %d)", id, r.model.Checkpoint.Config.VocabSize)}
		}
	}
	return &Placed{IDs: req.PromptIDs}, nil
}

// bigRequestBytes is the size of prompt text from which a request returns
// its memory to the OS when it is done; a long real conversation is well
// under 1 MB.
const bigRequestBytes = 8 << 20

// run executes one request on the worker goroutine.
func (r *Runner) run(j *job) (Usage, error) {
	req := &j.req
	if req.embed != nil {
		return r.runEmbed(j)
	}
	start := time.Now()
	if len(req.Messages)+len(req.Prompt) >= bigRequestBytes {
		// Decoding and rendering a request this big leaves garbage of
		// several times its size, which the runtime gives back to the OS
		// only slowly (tens of MB a minute): hand it back once the
		// request is done, so that one big request does not keep the
		// server's RSS up.
		defer debug.FreeOSMemory()
	}
	placed, err := r.prompt(j.ctx, req)
	if err != nil {
		return Usage{}, err
	}
	ids := placed.IDs
	ctxTokens := r.info.ContextTokens
	u := Usage{PromptTokens: len(ids)}
	j.promptTokens.Store(int64(len(ids)))
	if len(ids) == 0 {
		return u, &RequestError{errors.New("the prompt is empty")}
	}
	maxNew := ctxTokens - len(ids)
	if req.MaxTokens > 0 {
		if req.MaxTokens > maxNew {
			return u, &ContextError{PromptTokens: len(ids), MaxTokens: req.MaxTokens, ContextTokens: ctxTokens}
		}
		maxNew = req.MaxTokens
	}
	if maxNew <= 0 {
		return u, &ContextError{PromptTokens: len(ids), ContextTokens: ctxTokens}
	}
	media := len(req.Images)+len(req.Videos)+len(req.Audio) > 0
	if req.PromptLogprobs && media {
		return u, &RequestError{errors.New("prompt logprobs (echo) are not available for prompts with images, video or audio")}
	}
	seq, err := r.sequence(ids, len(ids)+maxNew, media || req.PromptLogprobs)
	if err != nil {
		return u, err
	}
	var gen []int32 // the tokens returned, for the prompt cache
	done := false   // a failed request's sequence is not kept
	defer func() {
		// (after dec.close, deferred later: a decoder that ran ahead has
		// dropped its unread steps)
		if done {
			r.keep(seq, ids, gen)
		} else {
			seq.Close()
		}
	}()
	if err := r.addImages(j.ctx, seq, req.Images, placed.ImagePixels, placed.ImageRows); err != nil {
		return u, err
	}
	if err := r.addClips(j.ctx, seq, placed.Clips, placed.ClipRows); err != nil {
		return u, err
	}
	if err := r.addAudio(j.ctx, seq, placed.Audio, placed.AudioRows); err != nil {
		return u, err
	}
	u.CachedTokens = seq.Len()
	if req.PromptLogprobs {
		lps, err := r.promptLogprobs(j.ctx, seq, ids, req.TopLogprobs)
		if err != nil {
			return u, err
		}
		if err := j.send(Delta{PromptLogprobs: lps}); err != nil {
			return u, err
		}
		if req.ScoreOnly {
			u.FinishReason = "length"
			return u, nil // the sequence holds all but the last token: not kept
		}
	}

	dec, err := r.newDecoder(j.ctx, seq, req, ids, j.batched)
	if err != nil {
		return u, err
	}
	defer dec.close()
	out := newTextOut(r, req, j, ids)
	var decodeStart time.Time
	u.FinishReason = "length"
	for n := 0; n < maxNew; n++ {
		id, lp, err := dec.next(n+1 < maxNew)
		if err != nil {
			return u, err
		}
		u.CompletionTokens++
		j.completionTokens.Add(1)
		gen = append(gen, id)
		if n == 0 {
			u.TimeToFirstToken = time.Since(start)
			decodeStart = dec.prefilled()
			u.PrefillDuration = decodeStart.Sub(start)
		}
		if r.eos[id] {
			u.FinishReason = "stop"
			if _, err := out.token(-1, lp); err != nil {
				return u, err
			}
			break
		}
		stopped, err := out.token(id, lp)
		if err != nil {
			return u, err
		}
		if out.overBudget(req.ThinkingBudget) {
			if f, ok := dec.(interface{ force([]int32) }); ok {
				f.force(r.tok.Encode(r.think.Close+"\n\n", false))
			}
		}
		if stopped != "" {
			u.FinishReason, u.StopSequence = "stop", stopped
			break
		}
	}
	u.DecodeDuration = time.Since(decodeStart)
	u.ReasoningTokens = out.reasoningTokens()
	if sp, ok := dec.(*speculative); ok {
		u.Drafted, u.Accepted = sp.stats.Drafted, sp.stats.Accepted
	}
	calls, err := out.close()
	if err != nil {
		return u, err
	}
	if calls {
		u.FinishReason = "tool_calls"
	}
	done = true
	return u, nil
}

func (r *Runner) logprob(chosen sample.Logprob, top []sample.Logprob) *TokenLogprob {
	piece := func(id int32) string { return r.tok.Decode([]int32{id}, false) }
	lp := &TokenLogprob{ID: chosen.ID, Token: piece(chosen.ID), Logprob: chosen.Logprob}
	for _, t := range top {
		lp.Top = append(lp.Top, TokenLogprob{ID: t.ID, Token: piece(t.ID), Logprob: t.Logprob})
	}
	return lp
}

// promptChunk is how many prompt tokens promptLogprobs runs at a time:
// their logits (chunk × vocabulary floats) are read back whole.
const promptChunk = 32

// promptLogprobs runs every prompt token but the last through seq with
// logits for each, and returns each prompt token's logprob given the ones
// before it (the first has none: NaN). The last token is left for the
// decoder, whose pass gives the first generated token.
func (r *Runner) promptLogprobs(ctx context.Context, seq *Sequence, ids []int32, top int) ([]TokenLogprob, error) {
	out := make([]TokenLogprob, 0, len(ids))
	out = append(out, TokenLogprob{ID: ids[0], Token: r.tok.Decode(ids[:1], false), Logprob: float32(math.NaN())})
	vocab := 0
	for at := 0; at < len(ids)-1; at += promptChunk {
		end := min(at+promptChunk, len(ids)-1)
		logits, err := seq.Forward(ctx, ids[at:end], true)
		if err != nil {
			return nil, err
		}
		if vocab == 0 {
			vocab = len(logits) / (end - at)
		}
		for i := range end - at {
			next := ids[at+i+1]
			out = append(out, *r.logprob(sample.LogSoftmax(logits[i*vocab:(i+1)*vocab], next, top)))
		}
	}
	return out, nil
}

// textOut turns generated tokens into deltas: streaming detokenization,
// stop strings held back until they can be ruled out, the thinking split
// from the answer, and tool-call markup parsed out of the answer.
type textOut struct {
	j           *job
	stream      interface{ Add(int32) string }
	flush       func() string
	stops       []string
	pending     string
	think       *reasoning.Stream
	thinkTokens int
	calls       *toolcall.Stream
	sawCall     bool
	budgetSpent bool // the thinking budget closed the thinking (overBudget)
}

// newTextOut prepares the output of a request whose prompt is ids.
func newTextOut(r *Runner, req *Request, j *job, ids []int32) *textOut {
	s := r.tok.NewStream(true)
	o := &textOut{j: j, stream: s, flush: s.Flush, stops: req.Stop}
	if req.Messages != nil && r.think.Marked() {
		// A constrained answer starts at its first token, whatever the
		// prompt opened; else the prompt's end says whether the reply
		// starts inside the thinking (a few tokens cover the open tag).
		tail := ids[max(0, len(ids)-16):]
		prefilled := req.Format == nil && req.ForceTool == nil && r.think.Prefilled(r.tok.Decode(tail, false))
		o.think = reasoning.NewStream(r.think, prefilled)
	}
	if len(req.Tools) > 0 && string(req.Tools) != "null" && r.tools != "" {
		o.calls = toolcall.NewStream(r.tools)
	}
	return o
}

// split passes text through the reasoning split, then the answer through
// tool-call parsing; final ends both.
func (o *textOut) split(text string, final bool) (Delta, error) {
	d := Delta{Content: text}
	if o.think != nil {
		d.Thinking, d.Content = o.think.Feed(text)
		if final {
			t, c := o.think.Close()
			d.Thinking, d.Content = d.Thinking+t, d.Content+c
		}
	}
	if o.calls != nil {
		d.Content, d.ToolCalls = o.calls.Feed(d.Content)
		if final {
			tail, more, err := o.calls.Close()
			if err != nil {
				return d, err
			}
			d.Content, d.ToolCalls = d.Content+tail, append(d.ToolCalls, more...)
		}
	}
	o.sawCall = o.sawCall || len(d.ToolCalls) > 0
	return d, nil
}

// token adds a generated token (id < 0: end of text) and returns the stop
// string that ended the answer, if one did.
func (o *textOut) token(id int32, lp *TokenLogprob) (string, error) {
	if id >= 0 {
		o.pending += o.stream.Add(id)
	} else {
		o.pending += o.flush()
	}
	stopped := ""
	emit := o.pending
	if i, which := firstStop(o.pending, o.stops); i >= 0 {
		emit, stopped = o.pending[:i], which
		o.pending = ""
	} else if id >= 0 {
		keep := heldBack(o.pending, o.stops)
		emit = o.pending[:len(o.pending)-keep]
		o.pending = o.pending[len(o.pending)-keep:]
	} else {
		o.pending = ""
	}
	// Tokens fed before the answer began are thinking (the tags' own
	// included) if the reply turns out to have thought: see reasoningTokens.
	if o.think != nil && !o.think.Answering() && id >= 0 {
		o.thinkTokens++
	}
	d, _ := o.split(emit, false) // only Close reports malformed calls
	if lp != nil {
		d.Logprobs = []TokenLogprob{*lp}
	}
	if d.Thinking == "" && d.Content == "" && d.ToolCalls == nil && d.Logprobs == nil {
		return stopped, nil
	}
	return stopped, o.j.send(d)
}

// overBudget reports, once, that the thinking has reached budget tokens
// (0: none) while still open: the caller closes it.
func (o *textOut) overBudget(budget int) bool {
	if budget <= 0 || o.think == nil || o.think.Answering() || o.thinkTokens != budget || o.budgetSpent {
		return false
	}
	o.budgetSpent = true
	return true
}

// reasoningTokens counts the tokens of the reply's thinking.
func (o *textOut) reasoningTokens() int {
	if o.think == nil || !o.think.Thought() {
		return 0
	}
	return o.thinkTokens
}

// close flushes held-back text and reports whether any tool call was made.
func (o *textOut) close() (bool, error) {
	rest := o.pending + o.flush()
	o.pending = ""
	d, err := o.split(rest, true)
	if err != nil {
		return o.sawCall, err
	}
	if d.Thinking == "" && d.Content == "" && d.ToolCalls == nil {
		return o.sawCall, nil
	}
	return o.sawCall, o.j.send(d)
}

// firstStop finds the earliest stop string in s.
func firstStop(s string, stops []string) (int, string) {
	best, which := -1, ""
	for _, st := range stops {
		if st == "" {
			continue
		}
		if i := strings.Index(s, st); i >= 0 && (best < 0 || i < best) {
			best, which = i, st
		}
	}
	return best, which
}

// heldBack is the length of the longest suffix of s that is a proper prefix
// of a stop string: text that may yet turn into a stop.
func heldBack(s string, stops []string) int {
	keep := 0
	for _, st := range stops {
		for n := min(len(st)-1, len(s)); n > keep; n-- {
			if strings.HasSuffix(s, st[:n]) {
				keep = n
				break
			}
		}
	}
	return keep
}
