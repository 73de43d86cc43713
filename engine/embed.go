package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"hearth/engine/embedding"
	"hearth/engine/family"
	"hearth/engine/tensor"
)

// MaxEmbedInputs bounds the inputs of one embeddings request.
const MaxEmbedInputs = 256

// EmbedRequest asks for one vector per input. Exactly one of Texts and IDs
// is set.
type EmbedRequest struct {
	Texts []string  // tokenized with the tokenizer's special tokens (its post-processor)
	IDs   [][]int32 // token ids, used as they are
	// Truncate cuts an input longer than the context to its first
	// context-many tokens (Ollama's truncate); otherwise it is refused.
	Truncate bool
	// Dimensions, when > 0, keeps the first Dimensions of each vector and
	// normalizes again; only a Matryoshka model takes it.
	Dimensions int
}

// EmbedResult is an EmbedRequest's answer.
type EmbedResult struct {
	Embeddings   [][]float32 // one per input, in order
	PromptTokens int         // all inputs' tokens, after truncation
	Duration     time.Duration
}

// embedTask rides a job through the runner's queue: the worker fills out.
type embedTask struct {
	ids  [][]int32
	out  [][]float32
	dims int
}

// InputError is an embeddings input the model refuses; Index is its place
// in the request.
type InputError struct {
	Index int
	Err   error
}

func (e *InputError) Error() string { return fmt.Sprintf("input[%d]: %v", e.Index, e.Err) }
func (e *InputError) Unwrap() error { return e.Err }

// embedConfig reads dir's sentence-transformers modules when m can give
// hidden states; nil with the reason otherwise.
func embedConfig(dir string, m *Model) (*embedding.Config, error) {
	c, err := embedding.Read(dir)
	if err != nil {
		return nil, err
	}
	if !m.HiddenStates() {
		return nil, fmt.Errorf("the %s family does not give hidden states", m.Family.Name)
	}
	return c, nil
}

// HiddenStates reports whether the model's family gives its final hidden
// states (family.Batch.Hidden): the universal module does.
func (m *Model) HiddenStates() bool { return m.Family.Tier == family.Generic }

// Hidden appends tokens and returns each one's final hidden state (after
// the final norm), [len(tokens)*hidden_size]. Long inputs run in chunks.
// On error the sequence is left as it was before the call.
func (s *Sequence) Hidden(ctx context.Context, tokens []int32) ([]float32, error) {
	if !s.m.HiddenStates() {
		return nil, fmt.Errorf("hidden states: the %s family gives only logits", s.m.Family.Name)
	}
	if len(tokens) == 0 {
		return nil, errors.New("hidden states: no tokens")
	}
	if s.Len()+len(tokens) > s.cap {
		return nil, fmt.Errorf("hidden states: %d tokens held + %d new exceed the context of %d", s.Len(), len(tokens), s.cap)
	}
	start := s.Len()
	var out []float32
	for i := 0; i < len(tokens); {
		chunk := tokens[i:s.chunkEnd(start, i, len(tokens))]
		res, err := s.runHidden(ctx, chunk)
		if err != nil {
			s.Trim(s.Len() - start)
			return nil, err
		}
		out = append(out, res...)
		i += len(chunk)
	}
	return out, nil
}

func (s *Sequence) runHidden(ctx context.Context, tokens []int32) ([]float32, error) {
	g := tensor.NewGraph(s.m.backend)
	before := s.Len()
	b, err := s.batch(g, tokens, tensor.T{})
	if err != nil {
		return nil, err
	}
	b.Hidden = true
	res, err := s.m.impl.Forward(g, b)
	if err == nil {
		if sh := g.Shape(res); len(sh) != 2 || sh[0] != len(tokens) || sh[1] != s.m.Checkpoint.Config.HiddenSize {
			err = fmt.Errorf("hidden states: the %s family gave %v, not [%d %d]", s.m.Family.Name, sh, len(tokens), s.m.Checkpoint.Config.HiddenSize)
		}
	}
	if err == nil {
		err = s.m.backend.Run(ctx, g, res)
	}
	if err != nil {
		s.Trim(s.Len() - before)
		return nil, err
	}
	out := make([]float32, tensor.Elements(g.Shape(res)))
	if err := s.m.backend.Read(res, out); err != nil {
		return nil, err
	}
	return out, nil
}

// CanEmbed is nil when the model serves embeddings, else a *RequestError
// that names the model and says why not.
func (r *Runner) CanEmbed() error {
	if r.embed != nil {
		return nil
	}
	why := "its checkpoint has no sentence-transformers modules.json with a Pooling module"
	if r.embedErr != nil && !errors.Is(r.embedErr, embedding.ErrNone) {
		why = r.embedErr.Error()
	}
	return &RequestError{fmt.Errorf("model %q does not support embeddings: %s", r.info.ID, why)}
}

// CheckDimensions is nil when the model can shorten its embeddings to d
// (0: not asked), else a *RequestError that says why not.
func (r *Runner) CheckDimensions(d int) error {
	if d == 0 {
		return nil
	}
	if r.embed == nil || !r.embed.Matryoshka {
		return &RequestError{fmt.Errorf("dimensions: model %q does not support shortened embeddings (its model card declares no Matryoshka training)", r.info.ID)}
	}
	if hidden := r.model.Checkpoint.Config.HiddenSize; d < 1 || d > hidden {
		return &RequestError{fmt.Errorf("dimensions: %d is outside [1, %d] for model %q", d, hidden, r.info.ID)}
	}
	return nil
}

// Embed tokenizes req's inputs, queues them behind the requests before it
// and returns one pooled vector per input. Each input runs alone on a fresh
// sequence (never the prompt cache). A model whose checkpoint has no
// sentence-transformers pooling refuses with a *RequestError naming it;
// a bad input is an *InputError.
func (r *Runner) Embed(ctx context.Context, req EmbedRequest) (EmbedResult, error) {
	if err := r.CanEmbed(); err != nil {
		return EmbedResult{}, err
	}
	if err := r.CheckDimensions(req.Dimensions); err != nil {
		return EmbedResult{}, err
	}
	n := len(req.Texts) + len(req.IDs)
	switch {
	case len(req.Texts) > 0 && len(req.IDs) > 0:
		return EmbedResult{}, &RequestError{errors.New("input: text and token ids together")}
	case n == 0:
		return EmbedResult{}, &RequestError{errors.New("input: no inputs")}
	case n > MaxEmbedInputs:
		return EmbedResult{}, &RequestError{fmt.Errorf("input: %d inputs; at most %d per request", n, MaxEmbedInputs)}
	}
	ctxTokens := r.info.ContextTokens
	vocab := r.model.Checkpoint.Config.VocabSize
	task := &embedTask{dims: req.Dimensions}
	total := 0
	for i := range n {
		var ids []int32
		lower := 0 // a text found too long early: a lower bound on its tokens
		if req.Texts != nil {
			if req.Truncate {
				ids = r.tok.Encode(req.Texts[i], true)
			} else if ids, lower = r.tok.EncodeLimit(req.Texts[i], true, ctxTokens); ids != nil {
				lower = 0
			}
		} else {
			ids = req.IDs[i]
			for _, id := range ids {
				if id < 0 || int(id) >= vocab {
					return EmbedResult{}, &InputError{i, fmt.Errorf("token id %d is outside the vocabulary [0, %d)", id, vocab)}
				}
			}
		}
		if lower > ctxTokens {
			return EmbedResult{}, &InputError{i, fmt.Errorf("at least %d tokens exceed the model's context of %d tokens (truncate it, or send it in parts)", lower, ctxTokens)}
		}
		if len(ids) == 0 {
			return EmbedResult{}, &InputError{i, errors.New("empty: no tokens to embed")}
		}
		if len(ids) > ctxTokens {
			if !req.Truncate {
				return EmbedResult{}, &InputError{i, fmt.Errorf("%d tokens exceed the model's context of %d tokens (truncate it, or send it in parts)", len(ids), ctxTokens)}
			}
			ids = ids[:ctxTokens]
		}
		total += len(ids)
		task.ids = append(task.ids, ids)
	}
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	j := &job{ctx: ctx, req: Request{embed: task}, out: make(chan Delta), done: make(chan result, 1)}
	if err := r.enqueue(j); err != nil {
		return EmbedResult{}, err
	}
	select {
	case <-ctx.Done():
		return EmbedResult{}, ctx.Err()
	case res := <-j.done:
		if res.err != nil {
			return EmbedResult{}, res.err
		}
	}
	return EmbedResult{Embeddings: task.out, PromptTokens: total, Duration: time.Since(start)}, nil
}

// runEmbed is the worker's side of Embed: every input on one sequence,
// emptied between inputs.
func (r *Runner) runEmbed(j *job) (Usage, error) {
	t := j.req.embed
	longest := 0
	for _, ids := range t.ids {
		longest = max(longest, len(ids))
	}
	seq, err := r.model.NewSequence(longest)
	if err != nil {
		return Usage{}, err
	}
	defer seq.Close()
	hidden := r.model.Checkpoint.Config.HiddenSize
	u := Usage{}
	for _, ids := range t.ids {
		h, err := seq.Hidden(j.ctx, ids)
		if err != nil {
			return u, err
		}
		seq.Trim(seq.Len())
		v, err := r.embed.Pool(h, hidden)
		if err != nil {
			return u, err
		}
		if t.dims > 0 {
			v = embedding.Truncate(v, t.dims)
		}
		t.out = append(t.out, v)
		u.PromptTokens += len(ids)
		j.promptTokens.Store(int64(u.PromptTokens))
	}
	return u, nil
}
