package engine

import (
	"context"
	"fmt"
	"slices"

	"hearth/engine/tokenizer"
)

// ModelDraft drafts with a smaller model that shares the target's
// vocabulary (a 0.6B for an 8B of one family, or a lower-bit copy of the
// target): its greedy continuation of the history, from a sequence of its
// own that stays in step with the history it is asked about (the common
// prefix stays in its caches; the rest is dropped and recomputed). A draft
// only guesses: speculative decoding keeps exactly the target's tokens
// (engine/speculate.go), so a failure here costs time, never correctness.
type ModelDraft struct {
	m    *Model
	seq  *Sequence
	held []int32 // the tokens seq holds
	cap  int
	// Err is the last failure of a draft pass (drafting stopped for it).
	Err error
}

// NewModelDraft makes a drafter over m for histories of up to ctxTokens
// tokens. The caller owns m; Close frees the drafter's sequence only.
func NewModelDraft(m *Model, ctxTokens int) (*ModelDraft, error) {
	seq, err := m.NewSequence(ctxTokens)
	if err != nil {
		return nil, err
	}
	return &ModelDraft{m: m, seq: seq, cap: ctxTokens}, nil
}

// Close frees the drafter's sequence.
func (d *ModelDraft) Close() { d.seq.Close() }

// Draft proposes up to k tokens that follow history: the draft model's
// greedy ones. It proposes none when the history would overflow its
// context or a pass fails.
func (d *ModelDraft) Draft(history []int32, k int) []int32 {
	if k <= 0 || len(history) == 0 || len(history)+k > d.cap {
		return nil
	}
	ctx := context.Background() // a draft pass is short: the target's request owns cancellation
	// Keep all of history but its last token: that one is fed below, and
	// its pass gives the first draft.
	p := commonPrefix(d.held, history[:len(history)-1])
	if drop := len(d.held) - p; drop > 0 {
		if d.seq.canTrim(drop) {
			d.seq.Trim(drop)
			d.held = d.held[:p]
		} else if err := d.reset(); err != nil { // a recurrent state cannot rewind
			d.Err = err
			return nil
		} else {
			p = 0
		}
	}
	feed := history[p:]
	out := make([]int32, 0, k)
	for len(out) < k {
		id, err := d.seq.ForwardArgmax(ctx, feed)
		if err != nil {
			d.Err = err
			d.reset()
			return out
		}
		d.held = append(d.held, feed...)
		out = append(out, id)
		feed = []int32{id}
	}
	return out
}

// reset starts an empty sequence.
func (d *ModelDraft) reset() error {
	d.seq.Close()
	d.held = d.held[:0]
	seq, err := d.m.NewSequence(d.cap)
	if err != nil {
		return err
	}
	d.seq = seq
	return nil
}

func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// SameVocabulary checks that a draft model's tokenizer is the target's:
// the same number of tokens and the same ids for a spread of text, so that
// a drafted id means the same token to both.
func SameVocabulary(target, draft *tokenizer.Tokenizer) error {
	if a, b := target.VocabSize(), draft.VocabSize(); a != b {
		return fmt.Errorf("the draft model's vocabulary has %d tokens, the target's %d", b, a)
	}
	for _, probe := range vocabProbes {
		a, b := target.Encode(probe, false), draft.Encode(probe, false)
		if !slices.Equal(a, b) {
			return fmt.Errorf("the draft model's tokenizer encodes %q as %v, the target's as %v", probe, b, a)
		}
	}
	if !slices.Equal(target.EOS(), draft.EOS()) {
		return fmt.Errorf("the draft model's end tokens %v differ from the target's %v", draft.EOS(), target.EOS())
	}
	return nil
}

// vocabProbes are texts whose tokens differ between unrelated tokenizers:
// words, code, digits, non-Latin script, whitespace runs.
var vocabProbes = []string{
	"The quick brown fox jumps over the lazy dog.",
	"func main() {\n\tfmt.Println(\"héllo, wörld\")\n}",
	"1234567890 3.14159 -42 0x7f",
	"日本語のテキストと한국어, العربية",
	"   indented\n\n\ttabs  and  spaces",
}
