// Package engine is the façade the server and the CLI use: it loads a
// checkpoint directory onto a backend and runs sequences over it. It knows
// no HTTP.
package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"hearth/engine/backend/cpu"
	"hearth/engine/cache"
	"hearth/engine/checkpoint"
	"hearth/engine/families"
	"hearth/engine/family"
	"hearth/engine/nn"
	"hearth/engine/tensor"
	"hearth/engine/tower"
	"hearth/engine/weights"
	"hearth/engine/whisper"
)

// Options configure a load.
type Options struct {
	Backend string // "auto" (default: a real GPU when there is one), "gpu" or "cpu"
	Threads int    // CPU worker threads; 0 = all cores
	// Int8Activations makes the CPU backend multiply quantized weights by
	// int8-quantized activations: faster decode, not exact (docs/design/cpu.md).
	Int8Activations bool
	// ChunkTokens is the most tokens one forward pass takes; longer
	// prompts are prefilled in chunks. 0 means 512.
	ChunkTokens int
	// Unpipelined makes greedy decoding read each step's token before it
	// queues the next, even on a backend that could run ahead (Greedy);
	// for measuring what running ahead gains.
	Unpipelined bool
	// KV is the element type of the attention caches: f32 (the default,
	// exact), q8 (int8 with a scale per 32 elements of a head row: about
	// 3.5 times the context in the same memory) or q4 (4-bit: about 6
	// times, less exact); docs/design/kv-quant.md. Recurrent state stays
	// float32.
	KV tensor.KVType
}

// Model is a loaded checkpoint: weights resident on a backend, ready to
// run sequences. Sequences of one Model may run from several goroutines
// (the runner's batched streams): their passes, allocations and frees take
// turns on pass. Towers and the device greedy loop run only while no other
// goroutine uses the model (the runner's exclusive requests).
type Model struct {
	Checkpoint *checkpoint.Checkpoint
	Family     *family.Family
	backend    tensor.Backend
	device     string // the GPU adapter's name, when on the GPU
	impl       family.Model
	vision     tower.Vision // nil: no vision tower loaded
	audio      tower.Audio  // nil: no audio tower loaded
	set        *weights.Set
	chunk      int
	sync       bool          // Options.Unpipelined
	kv         tensor.KVType // Options.KV
	pass       sync.Mutex
}

// Load reads the checkpoint in dir, resolves its family, opens its
// safetensors, uploads every tensor the family binds, and audits that
// nothing is missing or left over.
func Load(dir string, opt Options) (*Model, error) {
	if whisper.Detect(dir) {
		// An encoder–decoder speech model: engine/whisper runs it, behind
		// its own route, not the text decoder's.
		return nil, fmt.Errorf("load %s: %w: model_type \"whisper\" is a speech-to-text model; send its audio to POST /v1/audio/transcriptions", dir, family.ErrUnsupported)
	}
	ck, err := checkpoint.Read(dir)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	return LoadCheckpoint(ck, opt)
}

// LoadCheckpoint is Load of a checkpoint already read without error.
func LoadCheckpoint(ck *checkpoint.Checkpoint, opt Options) (*Model, error) {
	dir, cfg := ck.Dir, ck.Config
	fam, err := families.Resolve(cfg)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	b, device, err := newBackend(opt)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	if _, ok := b.(tensor.KVAllocator); opt.KV != tensor.KVF32 && !ok {
		b.Close()
		return nil, fmt.Errorf("load %s: the %s backend has no %v kv cache", dir, b.Name(), opt.KV)
	}
	// A backend that reads the weights in place (the CPU) streams them on
	// every decode step: it gets them on huge pages (weights.OpenOptions).
	copier, _ := b.(tensor.UploadCopier)
	copies := copier != nil && copier.CopiesUploads()
	set, err := ck.OpenWeights(weights.OpenOptions{HugePages: !copies})
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	fail := func(err error) (*Model, error) {
		b.Close()
		set.Close()
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	binder := weights.NewBinder(set, ck.Quant)
	loader := &nn.Loader{B: b, W: binder}
	impl, err := fam.New(cfg, loader)
	if err != nil {
		return fail(err)
	}
	vision, err := loadVision(ck, fam, loader)
	if err != nil {
		return fail(err)
	}
	audio, err := loadAudio(ck, fam, loader)
	if err != nil {
		return fail(err)
	}
	if err := binder.Audit(impl.AuditIgnore()); err != nil {
		return fail(err)
	}
	if copies {
		// Every weight now lives in the backend's own buffers: unmap the
		// checkpoint so its pages stop counting against the process (on a
		// Mac's unified memory they would be a second copy of the model).
		if err := set.Close(); err != nil {
			return fail(err)
		}
		set = nil
	}
	chunk := opt.ChunkTokens
	if chunk <= 0 {
		chunk = 512
	}
	return &Model{Checkpoint: ck, Family: fam, backend: b, device: device, impl: impl, vision: vision, audio: audio, set: set, chunk: chunk, sync: opt.Unpipelined, kv: opt.KV}, nil
}

// EmulatedNote ends the device name of a GPU backend whose adapter is a
// software emulation on the CPU (lavapipe): right, but slower than the cpu
// backend, so the start lines that print Model.Backend say so.
const EmulatedNote = "emulated on the CPU: for tests, slower than --backend cpu"

// NewBackend is the backend Load would pick for opt, with its device name
// ("" for the CPU): models run outside Load (Whisper) take theirs here.
func NewBackend(opt Options) (tensor.Backend, string, error) { return newBackend(opt) }

// newBackend picks the backend opt asks for; auto takes a real GPU when
// there is one and the CPU otherwise.
func newBackend(opt Options) (tensor.Backend, string, error) {
	switch opt.Backend {
	case "", "auto":
		if b, device, err := newGPU(true); err == nil && b != nil {
			return b, device, nil
		}
		return cpu.New(cpu.Options{Threads: opt.Threads, Int8Activations: opt.Int8Activations}), "", nil
	case "gpu":
		return newGPU(false)
	case "cpu":
		return cpu.New(cpu.Options{Threads: opt.Threads, Int8Activations: opt.Int8Activations}), "", nil
	}
	return nil, "", fmt.Errorf("unknown backend %q (auto, gpu or cpu)", opt.Backend)
}

// KV is the element type of the model's attention caches (Options.KV).
func (m *Model) KV() tensor.KVType { return m.kv }

// Backend names the backend the model runs on ("cpu", or "gpu (NVIDIA H200)").
func (m *Model) Backend() string {
	if m.device != "" {
		return m.backend.Name() + " (" + m.device + ")"
	}
	return m.backend.Name()
}

// Close frees the backend and unmaps the weights (if a backend that reads
// them in place still holds them).
func (m *Model) Close() error {
	err := m.backend.Close()
	if m.set != nil {
		err = errors.Join(err, m.set.Close())
	}
	return err
}

// Sequence is one conversation's state: its caches and length, and the
// tower outputs its prompt still has to take in (AddMedia).
type Sequence struct {
	m      *Model
	caches []cache.Layer
	cap    int
	chunk  int
	media  []Media // by position (AddMedia)
}

// NewSequence makes caches for up to ctxTokens tokens.
func (m *Model) NewSequence(ctxTokens int) (*Sequence, error) {
	if ctxTokens <= 0 {
		return nil, fmt.Errorf("context of %d tokens", ctxTokens)
	}
	// A picture's soft tokens go through in one pass (they see each
	// other both ways), so a pass may be as long as one picture's.
	chunk := m.chunk
	if m.vision != nil {
		chunk = max(chunk, m.vision.Prompt().Tokens)
		// a tower whose count depends on the picture may bound it
		// (Gemma 4's, whose decoder has rotating caches)
		if mt, ok := m.vision.(interface{ MaxTokens() int }); ok {
			chunk = max(chunk, mt.MaxTokens())
		}
	}
	if m.audio != nil {
		chunk = max(chunk, m.audio.MaxTokens()) // a clip goes through whole too
	}
	m.pass.Lock()
	caches, err := m.impl.NewCaches(cache.WithType(m.backend, m.kv), ctxTokens, chunk)
	m.pass.Unlock()
	if err != nil {
		return nil, err
	}
	return &Sequence{m: m, caches: caches, cap: ctxTokens, chunk: m.chunk}, nil
}

// Len is the number of tokens the sequence holds.
func (s *Sequence) Len() int { return s.caches[0].Len() }

// Trim drops the last n tokens (speculative rollback, regenerate).
func (s *Sequence) Trim(n int) {
	for _, c := range s.caches {
		c.Trim(n)
	}
}

// Close frees the caches.
func (s *Sequence) Close() {
	s.m.pass.Lock()
	defer s.m.pass.Unlock()
	for _, c := range s.caches {
		c.Free()
	}
}

// Forward appends tokens and returns the logits of the last one ([vocab]),
// or of every one ([len(tokens)*vocab]) when all is true. Long inputs run in
// chunks. On error the sequence is left as it was before the call.
func (s *Sequence) Forward(ctx context.Context, tokens []int32, all bool) ([]float32, error) {
	return s.forward(ctx, tokens, all, false)
}

// ForwardArgmax appends tokens like Forward and returns the id of the last
// one's largest logit, by sample.Argmax's rule (greedy decoding). The
// backend picks it where the logits are (tensor.Argmax), so a step reads
// back 4 bytes instead of the vocabulary's logits.
func (s *Sequence) ForwardArgmax(ctx context.Context, tokens []int32) (int32, error) {
	out, err := s.forward(ctx, tokens, false, true)
	if err != nil {
		return 0, err
	}
	return int32(out[0]), nil
}

func (s *Sequence) forward(ctx context.Context, tokens []int32, all, argmax bool) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, errors.New("forward: no tokens")
	}
	if s.Len()+len(tokens) > s.cap {
		return nil, fmt.Errorf("forward: %d tokens held + %d new exceed the context of %d", s.Len(), len(tokens), s.cap)
	}
	var out []float32
	start := s.Len()
	for i := 0; i < len(tokens); {
		chunk := tokens[i:s.chunkEnd(start, i, len(tokens))]
		lastChunk := i+len(chunk) == len(tokens)
		res, err := s.run(ctx, chunk, all, argmax)
		if err != nil {
			s.Trim(s.Len() - start)
			return nil, err
		}
		if all || lastChunk {
			out = append(out, res...)
		}
		i += len(chunk)
	}
	return out, nil
}

// run runs one chunk and reads back its logits, or with argmax only the
// index of the largest logit of each row.
func (s *Sequence) run(ctx context.Context, tokens []int32, all, argmax bool) ([]float32, error) {
	s.m.pass.Lock()
	defer s.m.pass.Unlock()
	g := tensor.NewGraph(s.m.backend)
	before := s.Len()
	b, err := s.batch(g, tokens, tensor.T{})
	if err != nil {
		return nil, err
	}
	b.AllLogits = all
	res, err := s.m.impl.Forward(g, b)
	if err == nil && argmax {
		res = g.Argmax(res)
		err = g.Err()
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

// ReadBandwidth measures, when the model runs on a device with memory of
// its own (the GPU), how fast that device's kernels read it: the rate of
// each of passes reads of about size bytes, in bytes per second. ok is
// false on the cpu backend, whose weights are read from host memory at the
// host's stream rate (engine/bench measures that).
func (m *Model) ReadBandwidth(size int64, passes int) (rates []float64, ok bool, err error) {
	r, ok := m.backend.(tensor.BandwidthReader)
	if !ok {
		return nil, false, nil
	}
	rates, err = r.ReadBandwidth(size, passes)
	return rates, true, err
}

// ProfileDecode runs one greedy decode step with the backend timing each
// kernel on its own (tensor.Profiler), after a prompt of ctxTokens tokens
// and one untimed step (ctxTokens+1 tokens held), and returns where the
// step's device time went. The step is a ForwardArgmax one: its token
// comes from the host, so it lacks Greedy's Store of the token (one tiny
// kernel) and reads its id from the inputs instead of a device buffer.
func (m *Model) ProfileDecode(ctx context.Context, ctxTokens int) ([]tensor.KernelTime, error) {
	p, ok := m.backend.(tensor.Profiler)
	if !ok {
		return nil, fmt.Errorf("the %s backend does not time its kernels", m.backend.Name())
	}
	s, err := m.NewSequence(ctxTokens + 2)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	id, err := s.ForwardArgmax(ctx, make([]int32, ctxTokens))
	if err == nil {
		id, err = s.ForwardArgmax(ctx, []int32{id}) // the decode plan, made untimed
	}
	if err != nil {
		return nil, err
	}
	if err := p.SetProfile(true); err != nil {
		return nil, err
	}
	defer p.SetProfile(false)
	if _, err := s.ForwardArgmax(ctx, []int32{id}); err != nil {
		return nil, err
	}
	return p.LastProfile()
}
