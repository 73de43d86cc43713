package gpu_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"hearth/engine/backend/gpu"
	"hearth/engine/cache"
	"hearth/engine/checkpoint"
	"hearth/engine/config"
	"hearth/engine/families"
	"hearth/engine/family"
	"hearth/engine/nn"
	"hearth/engine/tensor"
	"hearth/engine/weights"
	"hearth/internal/testenv"
)

const needAdapter = "a Vulkan/Metal adapter (apt-get install mesa-vulkan-drivers libvulkan1)"

var probe struct {
	once sync.Once
	err  error
}

// newGPU makes a backend, skipping (or failing under HEARTH_REQUIRE_ALL=1)
// when the machine has no adapter.
func newGPU(t testing.TB, opt gpu.Options) *gpu.Backend {
	t.Helper()
	probe.once.Do(func() { _, probe.err = gpu.Probe() })
	testenv.Need(t, needAdapter, probe.err == nil)
	b, err := gpu.New(opt)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// model is a checkpoint loaded onto a backend the way engine.Load does it
// (engine.Load picks its own backend; these tests bring theirs). Its
// buffers are tracked, so one backend can serve many models in turn.
type model struct {
	b    *tracked
	cfg  *config.Config
	impl family.Model
	set  *weights.Set
}

// tracked is a backend that remembers the buffers made through it.
type tracked struct {
	tensor.Backend
	bufs []tensor.T
}

func (t *tracked) Upload(w tensor.Weight) (tensor.T, error) {
	id, err := t.Backend.Upload(w)
	if err == nil {
		t.bufs = append(t.bufs, id)
	}
	return id, err
}

func (t *tracked) Alloc(shape []int) (tensor.T, error) {
	id, err := t.Backend.Alloc(shape)
	if err == nil {
		t.bufs = append(t.bufs, id)
	}
	return id, err
}

// Free frees a buffer and forgets it.
func (t *tracked) Free(id tensor.T) {
	for i, b := range t.bufs {
		if b == id {
			t.bufs = append(t.bufs[:i], t.bufs[i+1:]...)
			break
		}
	}
	t.Backend.Free(id)
}

// freeAll frees every buffer made through t.
func (t *tracked) freeAll() {
	for _, id := range t.bufs {
		t.Backend.Free(id)
	}
	t.bufs = nil
}

func load(dir string, backend tensor.Backend) (*model, error) {
	b := &tracked{Backend: backend}
	ck, err := checkpoint.Read(dir)
	if err != nil {
		return nil, err
	}
	cfg := ck.Config
	fam, err := families.Resolve(cfg)
	if err != nil {
		return nil, err
	}
	qc, err := weights.ParseQuantConfig(cfg.Quantization)
	if err != nil {
		return nil, err
	}
	set, err := weights.Open(dir)
	if err != nil {
		return nil, err
	}
	binder := weights.NewBinder(set, qc)
	impl, err := fam.New(cfg, &nn.Loader{B: b, W: binder})
	if err == nil {
		err = binder.Audit(impl.AuditIgnore())
	}
	if err != nil {
		b.freeAll()
		set.Close()
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	return &model{b: b, cfg: cfg, impl: impl, set: set}, nil
}

// close frees the model's buffers (the backend stays open) and unmaps it.
func (m *model) close() error {
	m.b.freeAll()
	return m.set.Close()
}

// seq mirrors engine.Sequence: caches, chunked prefill, logits of the last
// token.
type seq struct {
	m      *model
	caches []cache.Layer
	chunk  int
}

func (m *model) newSeq(ctxTokens, chunk int) (*seq, error) {
	caches, err := m.impl.NewCaches(m.b, ctxTokens, chunk)
	if err != nil {
		return nil, err
	}
	return &seq{m: m, caches: caches, chunk: chunk}, nil
}

func (s *seq) len() int { return s.caches[0].Len() }

// trim drops the last n tokens.
func (s *seq) trim(n int) {
	for _, c := range s.caches {
		c.Trim(n)
	}
}

// close frees the caches.
func (s *seq) close() {
	for _, c := range s.caches {
		c.Free()
	}
}

// forward appends tokens and returns the last token's logits.
func (s *seq) forward(ctx context.Context, tokens []int32) ([]float32, error) {
	var out []float32
	for i := 0; i < len(tokens); i += s.chunk {
		part := tokens[i:min(i+s.chunk, len(tokens))]
		g := tensor.NewGraph(s.m.b)
		logits, err := s.m.impl.Forward(g, &family.Batch{Tokens: part, Pos: s.len(), Caches: s.caches})
		if err != nil {
			return nil, err
		}
		if err := s.m.b.Run(ctx, g, logits); err != nil {
			return nil, err
		}
		if i+len(part) == len(tokens) {
			out = make([]float32, tensor.Elements(g.Shape(logits)))
			if err := s.m.b.Read(logits, out); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
