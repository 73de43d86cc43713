package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"hearth/engine"
	"hearth/engine/sample"
)

// BatchedReport is decode with several streams at once (continuous
// batching, engine.Model.ForwardBatch): every stream's next token in one
// pass a step.
type BatchedReport struct {
	Streams int `json:"streams"`
	// AggregateTokS is the tokens of every stream per second;
	// PerStreamTokS, one stream's.
	AggregateTokS float64 `json:"aggregate_tok_s"`
	PerStreamTokS float64 `json:"per_stream_tok_s"`
	// Speedup is AggregateTokS over one batched stream's in the same run
	// (the 1-stream entry, which is always measured).
	Speedup float64 `json:"speedup"`
}

// measureBatched times opt.Decode batched steps of n streams for each n of
// opt.Concurrency, each stream started from a short prompt of its own and
// decoding greedily on the host (as the runner's batched requests do).
func (r *Report) measureBatched(ctx context.Context, m *engine.Model, opt Options) error {
	if len(opt.Concurrency) == 0 {
		return nil
	}
	if !m.CanBatch() {
		return fmt.Errorf("--concurrency: family %s decodes one sequence at a time", m.Family.Name)
	}
	vocab := m.Checkpoint.Config.VocabSize
	counts := slices.Clone(opt.Concurrency)
	if !slices.Contains(counts, 1) {
		counts = append(counts, 1) // the baseline
	}
	slices.Sort(counts)
	counts = slices.Compact(counts)
	var one float64
	for _, n := range counts {
		var samples []float64
		for i := 0; i < opt.Repeats; i++ {
			opt.logf("decode %d tokens in each of %d streams (%d/%d)", opt.Decode, n, i+1, opt.Repeats)
			d, err := decodeBatched(ctx, m, vocab, n, opt.Decode)
			if err != nil {
				return fmt.Errorf("decode %d streams: %w", n, err)
			}
			samples = append(samples, float64(n*opt.Decode)/d.Seconds())
		}
		agg := median(samples)
		if n == 1 {
			one = agg
		}
		r.Batched = append(r.Batched, BatchedReport{Streams: n, AggregateTokS: agg, PerStreamTokS: agg / float64(n), Speedup: agg / one})
		r.Samples.BatchedTokS = append(r.Samples.BatchedTokS, samples)
	}
	return nil
}

// decodeBatched prefills n streams with 16-token prompts of their own, takes
// one untimed step, then times steps batched steps.
func decodeBatched(ctx context.Context, m *engine.Model, vocab, n, steps int) (time.Duration, error) {
	const promptLen = 16
	seqs := make([]*engine.Sequence, n)
	next := make([]int32, n)
	all := prompt(n*promptLen, vocab)
	for i := range seqs {
		s, err := m.NewSequence(promptLen + steps + 2)
		if err != nil {
			return 0, err
		}
		defer s.Close()
		logits, err := s.Forward(ctx, all[i*promptLen:(i+1)*promptLen], false)
		if err != nil {
			return 0, err
		}
		seqs[i], next[i] = s, sample.Argmax(logits)
	}
	step := func() error {
		out, err := m.ForwardBatch(ctx, seqs, next)
		if err != nil {
			return err
		}
		for i, l := range out {
			next[i] = sample.Argmax(l)
		}
		return nil
	}
	if err := step(); err != nil {
		return 0, err
	}
	start := time.Now()
	for range steps {
		if err := step(); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// parseCounts reads a comma-separated list of positive counts of what
// (tokens, streams); empty gives none.
func parseCounts(flag, s, what string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bench: --%s: %q is not a %s count", flag, p, what)
		}
		out = append(out, n)
	}
	return out, nil
}
