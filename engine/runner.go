package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"hearth/engine/config"
	"hearth/engine/draft"
	"hearth/engine/embedding"
	"hearth/engine/family"
	"hearth/engine/reasoning"
	"hearth/engine/sample"
	"hearth/engine/template"
	"hearth/engine/tokenizer"
	"hearth/engine/toolcall"
	"hearth/media"
)

// Runner is a loaded model ready to serve: weights, tokenizer, chat
// template and a bounded request queue. One goroutine owns the model;
// Generate queues a request and streams its deltas back to the caller.
type Runner struct {
	id    string
	model *Model
	tok   *tokenizer.Tokenizer
	tmpl  *template.Template // nil when the checkpoint has no chat template
	tools toolcall.Format
	think reasoning.Tags // how the template marks thinking; zero: not at all
	info  Info
	eos   map[int32]bool
	// formats holds the grammars of constrained requests (constrain.go).
	formats formats
	draft   draft.Source // nil: no speculative decoding
	cache   *PromptCache // nil: off
	// imgProc preprocesses pictures for the vision tower; nil when the
	// model takes none (visionErr says why, when it has a tower).
	imgProc   imageProcessor
	visionErr error
	// embed is the checkpoint's sentence-transformers pooling (Embed);
	// nil when it has none or the family gives no hidden states (embedErr).
	embed    *embedding.Config
	embedErr error

	// batch runs the decode steps of concurrent plain text requests
	// together (batch.go); nil when Parallel is 1 or the family cannot.
	// slots bounds the requests running at once; streams counts them.
	batch   *batcher
	slots   chan struct{}
	streams sync.WaitGroup

	queueLen int
	mu       sync.Mutex
	pending  []*job        // waiting for the worker, oldest first
	wake     chan struct{} // signals the worker that pending grew
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// RunnerOptions configure Open.
type RunnerOptions struct {
	Options
	ID            string // the name clients use; default: the directory name
	ContextTokens int    // default min(8192, max_position_embeddings)
	QueueLen      int    // requests waiting beyond the running one; default 64
	// Draft, when set, drafts tokens for speculative decoding of every
	// request that does not turn it off (docs/design/speculative.md).
	Draft draft.Source
	// DraftModel, when set and Draft is not, drafts with that model
	// (ModelDraft, a sequence of its own per runner) where its tokenizer
	// is the target's; for any other target the runner decodes plainly
	// and Info.DraftNote says why. The caller owns the model.
	DraftModel *Model
	// PromptCacheBytes bounds the finished sequences kept for reuse by
	// later prompts that start the same way (PromptCache): 0 keeps one
	// sequence of the whole context, the usual multi-turn chat; a negative
	// value turns the cache off.
	PromptCacheBytes int64
	// Parallel is how many text requests may decode at once, their steps
	// batched into one pass (continuous batching, batch.go); each holds a
	// sequence of the whole context. 0 or 1: one at a time.
	Parallel int
}

// Info describes a loaded model for /v1/models, /api/ps and the menu.
type Info struct {
	ID            string
	Dir           string
	ModelType     string
	Family        string
	Tier          string
	Fidelity      string
	Capabilities  []string
	Backend       string
	ContextTokens int
	Params        int64
	WeightBytes   int64
	Quantization  string
	// AudioSeconds is the longest sound clip the model hears whole (0: it
	// takes no audio); a longer one is cut there.
	AudioSeconds float64
	// VideoSampling, when not nil, is how the model's video processor
	// samples a clip's frames (Gemma 4's: num_frames evenly); nil takes
	// media.VideoFrames' default (Qwen3-VL's).
	VideoSampling *media.VideoOptions
	// DraftNote says why a draft model given to the runner does not draft
	// for it ("" when it does, or none was given).
	DraftNote string
	// Parallel is how many text requests decode together (batched); 0
	// when one runs at a time.
	Parallel int
	// KVCache is the element type of the attention caches (Options.KV):
	// "f32", "q8" or "q4".
	KVCache string
}

// Open loads dir (config, weights, tokenizer, chat template) and starts the
// goroutine that owns it.
// Its errors are *LoadError.
func Open(dir string, opt RunnerOptions) (*Runner, error) {
	m, err := Load(dir, opt.Options)
	if err != nil {
		return nil, &LoadError{Dir: dir, Err: err}
	}
	r, err := newRunner(dir, m, opt)
	if err != nil {
		m.Close()
		return nil, &LoadError{Dir: dir, Err: fmt.Errorf("load %s: %w", dir, err)}
	}
	return r, nil
}

// LoadError is a checkpoint that could not be opened: a missing or corrupt
// file, a failed weight audit, an unsupported architecture or rope type,
// no backend. It is the model's fault, not the request's or the server's,
// and the next request for the model tries again. Its message names the
// directory and the cause.
type LoadError struct {
	Dir string
	Err error
}

func (e *LoadError) Error() string { return e.Err.Error() }
func (e *LoadError) Unwrap() error { return e.Err }

func newRunner(dir string, m *Model, opt RunnerOptions) (*Runner, error) {
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, err
	}
	tmpl, err := template.Load(dir)
	if err != nil && !errors.Is(err, template.ErrNoTemplate) {
		return nil, err
	}
	c, sum := m.Checkpoint.Config, m.Checkpoint.Weights
	ctxTokens := opt.ContextTokens
	if ctxTokens <= 0 {
		ctxTokens = 8192
	}
	if c.MaxPositionEmbeddings > 0 {
		ctxTokens = min(ctxTokens, c.MaxPositionEmbeddings)
	}
	id := opt.ID
	if id == "" {
		id = filepath.Base(dir)
	}
	// Vision and audio are the model's when their tower loaded (and, for
	// pictures, the checkpoint's image processor), not the family's.
	caps := m.Family.Caps &^ (family.Vision | family.Audio)
	var imgProc imageProcessor
	var visionErr error
	if m.HasVision() {
		if imgProc, visionErr = loadImageProcessor(dir); visionErr == nil {
			caps |= family.Vision
		} else {
			imgProc = nil
		}
	}
	if m.HasAudio() {
		caps |= family.Audio
	}
	embed, embedErr := embedConfig(dir, m)
	if embed != nil {
		caps |= family.Embeddings
	}
	queueLen := opt.QueueLen
	if queueLen <= 0 {
		queueLen = 64
	}
	r := &Runner{
		id: id, model: m, tok: tok, tmpl: tmpl,
		imgProc: imgProc, visionErr: visionErr,
		embed: embed, embedErr: embedErr,
		eos:      map[int32]bool{},
		draft:    opt.Draft,
		queueLen: queueLen,
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	if opt.PromptCacheBytes >= 0 {
		r.cache = &PromptCache{MaxBytes: opt.PromptCacheBytes}
	}
	if tmpl != nil {
		r.tools = toolcall.Detect(tmpl.Source())
		r.think = reasoning.Detect(tmpl.Source())
		if r.tools != "" {
			caps |= family.Tools
		}
		if r.think.Marked() {
			caps |= family.Thinking
		}
	}
	for _, e := range c.EOSTokenIDs {
		r.eos[int32(e)] = true
	}
	for _, e := range tok.EOS() {
		r.eos[e] = true
	}
	r.info = Info{
		ID: id, Dir: dir, ModelType: c.ModelType, Family: m.Family.Name, Tier: string(m.Family.Tier),
		Fidelity: m.Family.Fidelity, Capabilities: append([]string{}, caps.Names()...), Backend: m.Backend(),
		ContextTokens: ctxTokens, Params: sum.ParamCount, WeightBytes: sum.Bytes, Quantization: m.Checkpoint.Quantization(),
		AudioSeconds: m.AudioSeconds(), KVCache: m.KV().String(),
	}
	if _, ok := r.clips(); ok {
		r.info.Capabilities = append(r.info.Capabilities, "video")
		if o, ok := r.imgProc.(*media.ImageProcessor).VideoProcessor.SampleOptions(); ok {
			r.info.VideoSampling = &o
		}
	}
	if opt.Parallel > 1 && m.CanBatch() {
		r.batch = newBatcher(m)
		r.slots = make(chan struct{}, opt.Parallel)
		r.info.Parallel = opt.Parallel
	}
	if opt.DraftModel != nil && r.draft == nil {
		if err := r.useDraftModel(opt.DraftModel); err != nil {
			r.info.DraftNote = fmt.Sprintf("not drafting with %s: %v", filepath.Base(opt.DraftModel.Checkpoint.Dir), err)
		}
	}
	r.wg.Add(1)
	go r.loop()
	return r, nil
}

// useDraftModel drafts with m when its vocabulary is the runner's.
func (r *Runner) useDraftModel(m *Model) error {
	dtok, err := tokenizer.Load(m.Checkpoint.Dir)
	if err != nil {
		return err
	}
	if err := SameVocabulary(r.tok, dtok); err != nil {
		return err
	}
	md, err := NewModelDraft(m, r.info.ContextTokens)
	if err != nil {
		return err
	}
	r.draft = md
	return nil
}

// Info describes the model.
func (r *Runner) Info() Info { return r.info }

// Defaults are the sampling parameters the checkpoint ships in
// generation_config.json; a request's own values override them.
func (r *Runner) Defaults() sample.Options {
	return SamplingDefaults(r.model.Checkpoint.Config.Generation)
}

// SamplingDefaults are the sampling parameters generation_config.json asks
// for, as a request would give them.
func SamplingDefaults(g config.Generation) sample.Options {
	d := sample.Options{Temperature: g.Temperature, TopP: g.TopP, TopK: g.TopK, MinP: g.MinP, RepetitionPenalty: g.RepetitionPenalty}
	if g.DoSample != nil && !*g.DoSample {
		// transformers decodes greedily then, whatever the temperature;
		// top_k 1 says so without a zero that reads as "unset"
		d.Temperature, d.TopK = 0, 1
	}
	return d
}

// Tokenizer is the model's tokenizer (safe for concurrent reads).
func (r *Runner) Tokenizer() *tokenizer.Tokenizer { return r.tok }

// Close stops the worker after the running request and frees the model.
func (r *Runner) Close() error {
	r.stopOnce.Do(func() { close(r.stop) })
	r.wg.Wait()
	if r.batch != nil {
		r.batch.close()
	}
	if md, ok := r.draft.(*ModelDraft); ok {
		md.Close()
	}
	if r.cache != nil {
		r.cache.Close()
	}
	return r.model.Close()
}

// ErrQueueFull is returned when the request queue is full.
var ErrQueueFull = errors.New("too many requests are waiting; try again shortly")

// ErrClosed is returned for requests that arrive after Close.
var ErrClosed = errors.New("the model is being unloaded")

// ContextError says a request does not fit in the model's context.
type ContextError struct {
	PromptTokens int
	// AtLeast says PromptTokens is a lower bound: the prompt was found too
	// long before it was tokenized in full.
	AtLeast       bool
	MaxTokens     int
	ContextTokens int
}

func (e *ContextError) Error() string {
	if e.AtLeast {
		return fmt.Sprintf("the prompt is at least %d tokens, but the model's context is %d tokens", e.PromptTokens, e.ContextTokens)
	}
	if e.PromptTokens >= e.ContextTokens {
		return fmt.Sprintf("the prompt is %d tokens, but the model's context is %d tokens", e.PromptTokens, e.ContextTokens)
	}
	return e.Message("the tokens to generate")
}

// Message is Error with the limit on generated tokens named as the caller's
// API names it ("max_tokens", "num_predict").
func (e *ContextError) Message(maxTokensName string) string {
	if e.AtLeast || e.PromptTokens >= e.ContextTokens {
		return e.Error()
	}
	return fmt.Sprintf("the prompt (%d tokens) plus %s (%d) exceeds the model's context of %d tokens", e.PromptTokens, maxTokensName, e.MaxTokens, e.ContextTokens)
}

// RequestError is a request the model cannot serve as asked (a bad
// parameter value, a template that refuses the conversation). The server
// answers it with a 400.
type RequestError struct{ Err error }

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

type job struct {
	ctx  context.Context
	req  Request
	out  chan Delta
	done chan result

	// Tokens counted so far by the worker: the usage a request cut short
	// (client gone, server shutting down) reports.
	promptTokens, completionTokens atomic.Int64
	// batched: the request runs beside others, its steps batched.
	batched bool
}

// counted is the usage of j so far.
func (j *job) counted() Usage {
	return Usage{PromptTokens: int(j.promptTokens.Load()), CompletionTokens: int(j.completionTokens.Load())}
}

type result struct {
	usage Usage
	err   error
}

// Generate queues req and calls emit with each delta, in order, from the
// caller's goroutine. It returns when generation ends, ctx is cancelled, or
// emit returns an error (which cancels the generation). A generation cut
// short reports the tokens counted until then with its error.
func (r *Runner) Generate(ctx context.Context, req Request, emit func(Delta) error) (Usage, error) {
	if err := req.Sample.Validate(); err != nil {
		return Usage{}, &RequestError{err}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // also tells the worker to stop if we leave early
	j := &job{ctx: ctx, req: req, out: make(chan Delta, 16), done: make(chan result, 1)}
	if err := r.enqueue(j); err != nil {
		return Usage{}, err
	}
	var emitErr error
	for {
		select {
		case d := <-j.out:
			if emitErr == nil {
				if emitErr = emit(d); emitErr != nil {
					cancel()
				}
			}
		case <-ctx.Done():
			// The client left (or emit failed): don't wait for the
			// worker, which sees the same cancellation.
			if emitErr != nil {
				return j.counted(), emitErr
			}
			return j.counted(), ctx.Err()
		case res := <-j.done:
			// The worker sent every delta before done: drain them.
			for len(j.out) > 0 {
				if d := <-j.out; emitErr == nil {
					emitErr = emit(d)
				}
			}
			if emitErr != nil && res.err == nil {
				res.err = emitErr
			}
			return res.usage, res.err
		}
	}
}

// enqueue adds j to the pending list unless it is full. Requests whose
// client has gone are dropped first, so they never hold a slot.
func (r *Runner) enqueue(j *job) error {
	select {
	case <-r.stop:
		return ErrClosed
	default:
	}
	r.mu.Lock()
	live := r.pending[:0]
	for _, p := range r.pending {
		if p.ctx.Err() == nil {
			live = append(live, p)
		} else {
			p.done <- result{err: p.ctx.Err()}
		}
	}
	r.pending = live
	if len(r.pending) >= r.queueLen {
		r.mu.Unlock()
		return ErrQueueFull
	}
	r.pending = append(r.pending, j)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return nil
}

// next pops the oldest pending job, or nil.
func (r *Runner) next() *job {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) == 0 {
		return nil
	}
	j := r.pending[0]
	r.pending = r.pending[1:]
	return j
}

// loop serves the pending requests in order: each alone, or, when the
// runner batches, a batchable one on a goroutine of its own beside the
// others running (up to Parallel), while one that needs the model to
// itself waits for them to finish.
func (r *Runner) loop() {
	defer r.wg.Done()
	defer r.streams.Wait() // Close frees the model after the streams end
	closed := func() {
		for j := r.next(); j != nil; j = r.next() {
			j.done <- result{err: ErrClosed}
		}
	}
	for {
		select {
		case <-r.stop:
			closed()
			return
		case <-r.wake:
		}
		for j := r.next(); j != nil; j = r.next() {
			if err := j.ctx.Err(); err != nil {
				j.done <- result{err: err}
				continue
			}
			if r.batchable(&j.req) {
				select {
				case r.slots <- struct{}{}:
				case <-r.stop:
					j.done <- result{err: ErrClosed}
					closed()
					return
				}
				j.batched = true
				r.streams.Add(1)
				go func() {
					defer r.streams.Done()
					u, err := r.run(j)
					<-r.slots
					j.done <- result{usage: u, err: err}
				}()
				continue
			}
			r.streams.Wait()
			u, err := r.run(j)
			j.done <- result{usage: u, err: err}
			select {
			case <-r.stop:
				closed()
				return
			default:
			}
		}
	}
}

// batchable says whether req may run beside others with its decode steps
// batched: a text request (no pictures, clips or sound, which take the
// model's towers; no prompt logprobs or embeddings) to a runner that
// batches and drafts nothing.
func (r *Runner) batchable(req *Request) bool {
	return r.batch != nil && r.draft == nil && req.embed == nil && !req.PromptLogprobs &&
		len(req.Images)+len(req.Videos)+len(req.Audio) == 0
}

// send delivers a delta unless the request was cancelled.
func (j *job) send(d Delta) error {
	select {
	case j.out <- d:
		return nil
	case <-j.ctx.Done():
		return j.ctx.Err()
	}
}
