package fit_test

// The estimate is validated against the peak resident set of a real load
// and prefill. Peak RSS is a property of a whole process, so each
// measurement runs in a child: the test binary re-executed with
// childEnv set, which TestMain turns into one load + prefill that prints
// its numbers as JSON.

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"hearth/engine"
	"hearth/engine/checkpoint"
	"hearth/engine/families"
	"hearth/engine/fit"
	"hearth/engine/tensor"
	"hearth/engine/tokenizer"
	"hearth/engine/weights"
	"hearth/internal/testenv"
	"hearth/internal/testmodels"
)

const childEnv = "HEARTH_FIT_CHILD"

// job is what a child process does: load Dir, make a sequence of Context
// tokens, prefill Prompt random tokens in chunks of Chunk.
type job struct {
	Dir     string `json:"dir"`
	Context int    `json:"context"`
	Chunk   int    `json:"chunk"`
	Prompt  int    `json:"prompt"`
	Decode  int    `json:"decode"` // decode steps after the prefill
	// Backend is the engine backend; "" is the CPU.
	Backend string `json:"backend"`
	// Tokenizer, when set, is a directory whose tokenizer the child
	// loads instead of a model.
	Tokenizer string `json:"tokenizer"`
}

// measurement is what a child reports.
type measurement struct {
	BaselineBytes int64  `json:"baseline_bytes"` // RSS before the load
	LoadedBytes   int64  `json:"loaded_bytes"`   // RSS after the passes, model still loaded
	LoadedDetail  string `json:"loaded_detail"`  // where the memory was then
	PeakBytes     int64  `json:"peak_bytes"`     // peak RSS after the prefill
	Detail        string `json:"detail"`         // where the memory is, for the log
	Err           string `json:"err,omitempty"`
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(spec))
	}
	os.Exit(m.Run())
}

func runChild(spec string) int {
	var j job
	out := json.NewEncoder(os.Stdout)
	if err := json.Unmarshal([]byte(spec), &j); err != nil {
		out.Encode(measurement{Err: err.Error()})
		return 1
	}
	base, _ := currentRSS()
	res := measurement{BaselineBytes: base}
	if err := loadAndPrefill(j, &res); err != nil {
		res.Err = err.Error()
	}
	res.PeakBytes, _ = peakRSS()
	res.Detail = detail()
	out.Encode(res)
	return 0
}

func loadAndPrefill(j job, res *measurement) error {
	if j.Tokenizer != "" {
		tok, err := tokenizer.Load(j.Tokenizer)
		if err == nil && len(tok.Encode("hello world", false)) == 0 {
			err = fmt.Errorf("%s encodes nothing", j.Tokenizer)
		}
		return err
	}
	// The CPU backend explicitly: "auto" would probe for a GPU and map the
	// Vulkan driver into the process, which is not what this measures.
	m, err := engine.Load(j.Dir, engine.Options{Backend: cmp.Or(j.Backend, "cpu"), ChunkTokens: j.Chunk})
	if err != nil {
		return err
	}

	defer m.Close()
	seq, err := m.NewSequence(j.Context)
	if err != nil {
		return err
	}
	defer seq.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := make([]int32, j.Prompt)
	for i := range tokens {
		tokens[i] = int32(rng.IntN(m.Checkpoint.Config.VocabSize))
	}
	if _, err := seq.Forward(context.Background(), tokens, false); err != nil {
		return err
	}
	for i := 0; i < max(j.Decode, 1) && seq.Len() < j.Context; i++ { // decode steps, as a generation would
		if _, err := seq.Forward(context.Background(), tokens[i%len(tokens):i%len(tokens)+1], false); err != nil {
			return err
		}
	}
	res.LoadedBytes, _ = currentRSS()
	res.LoadedDetail = detail()
	return nil
}

// measure runs j in a child process with the default collector settings.
func measure(t *testing.T, j job) measurement {
	t.Helper()
	spec, _ := json.Marshal(j)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec), "GOGC=100", "GOMEMLIMIT=off")
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("child for %s: %v", j.Dir, err)
	}
	var res measurement
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("child for %s printed %q: %v", j.Dir, raw, err)
	}
	if res.Err != "" {
		t.Fatalf("child for %s: %s", j.Dir, res.Err)
	}
	return res
}

// shapeOf reads dir the way admission does: config and headers only.
func shapeOf(t *testing.T, dir string) fit.Shape {
	t.Helper()
	ck, err := checkpoint.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return families.Shape(ck.Config, ck.Weights.Bytes) // with the family's cache layout
}

// synthetic describes a random-weight Llama checkpoint for the universal
// module. Embeddings are tied, so the head's matmul touches every page of
// the largest tensor, as a real prefill does.
type synthetic struct {
	Vocab, Hidden, Layers, Heads, HeadDim, KVHeads, Intermediate int
}

func (s synthetic) write(t *testing.T, dir string) {
	t.Helper()
	hd := s.HeadDim
	cfg := map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama",
		"hidden_size": s.Hidden, "intermediate_size": s.Intermediate,
		"num_hidden_layers": s.Layers, "num_attention_heads": s.Heads,
		"num_key_value_heads": s.KVHeads, "head_dim": hd, "vocab_size": s.Vocab,
		"max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
		"tie_word_embeddings": true, "hidden_act": "silu",
	}
	raw, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	dense := func(name string, shape ...int) tensor.Weight {
		n := tensor.Elements(shape)
		data := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(rng.NormFloat64()*0.02)))
		}
		return tensor.Weight{Name: name, DType: tensor.F32, Shape: shape, Data: data}
	}
	ones := func(name string, n int) tensor.Weight {
		data := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(1))
		}
		return tensor.Weight{Name: name, DType: tensor.F32, Shape: []int{n}, Data: data}
	}
	ws := []tensor.Weight{dense("model.embed_tokens.weight", s.Vocab, s.Hidden), ones("model.norm.weight", s.Hidden)}
	for i := 0; i < s.Layers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		ws = append(ws,
			ones(p+"input_layernorm.weight", s.Hidden),
			ones(p+"post_attention_layernorm.weight", s.Hidden),
			dense(p+"self_attn.q_proj.weight", s.Heads*hd, s.Hidden),
			dense(p+"self_attn.k_proj.weight", s.KVHeads*hd, s.Hidden),
			dense(p+"self_attn.v_proj.weight", s.KVHeads*hd, s.Hidden),
			dense(p+"self_attn.o_proj.weight", s.Hidden, s.Heads*hd),
			dense(p+"mlp.gate_proj.weight", s.Intermediate, s.Hidden),
			dense(p+"mlp.up_proj.weight", s.Intermediate, s.Hidden),
			dense(p+"mlp.down_proj.weight", s.Hidden, s.Intermediate),
		)
	}
	if err := weights.Write(filepath.Join(dir, "model.safetensors"), ws, nil); err != nil {
		t.Fatal(err)
	}
}

func canMeasure(t *testing.T) {
	t.Helper()
	_, ok := peakRSS()
	testenv.Need(t, "a peak-RSS counter (getrusage)", ok)
}

func mb(n int64) float64 { return float64(n) / 1e6 }

// big is the synthetic model: 234 MB of f32 weights, most in the tied
// embedding (whose every page the head's matmul reads), and wide KV heads
// so the cache is a real share of the total.
var big = synthetic{Vocab: 200000, Hidden: 256, Layers: 4, Heads: 8, HeadDim: 128, KVHeads: 8, Intermediate: 1024}

// TestEstimateMatchesRSS loads the synthetic checkpoint in a child
// process and compares the estimate (with the child's measured baseline as
// the overhead) with its peak RSS. A served generation (a prefill, then
// decode steps until the collector reaches its steady state) must land
// within ±15%; a prefill alone, which has not yet left the garbage the
// estimate allows for, must stay under the estimate.
func TestEstimateMatchesRSS(t *testing.T) {
	canMeasure(t)
	if testing.Short() {
		t.Skip("skipping: loads a 234 MB model and runs 2048 tokens through it (about a minute on two cores)")
	}
	dir := t.TempDir()
	big.write(t, dir)
	shape := shapeOf(t, dir)
	cases := []struct {
		name   string
		j      job
		lo, hi float64 // bounds on estimate/measured
	}{
		{"generate-ctx2048", job{Context: 2048, Chunk: 512, Prompt: 1536, Decode: 300}, 0.85, 1.15},
		{"prefill-ctx512", job{Context: 512, Chunk: 512, Prompt: 512}, 1, 1.25},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.j.Dir = dir
			got := measure(t, tc.j)
			b := fit.Estimate(shape, fit.Options{ContextTokens: tc.j.Context, ChunkTokens: tc.j.Chunk, OverheadBytes: got.BaselineBytes})
			ratio := float64(b.Total()) / float64(got.PeakBytes)
			t.Logf("child at exit: %s", got.Detail)
			t.Logf("estimate %.1f MB (weights %.1f, kv %.1f, work %.1f, gc %.1f, overhead %.1f); measured peak RSS %.1f MB; estimate/measured %.3f",
				mb(b.Total()), mb(b.WeightBytes), mb(b.KVBytes), mb(b.WorkBytes), mb(b.GCBytes), mb(b.OverheadBytes), mb(got.PeakBytes), ratio)
			if ratio < tc.lo || ratio > tc.hi {
				t.Errorf("estimate %.1f MB is %.0f%% of the measured peak %.1f MB, want %.0f%%–%.0f%%", mb(b.Total()), 100*ratio, mb(got.PeakBytes), 100*tc.lo, 100*tc.hi)
			}
		})
	}
}

// TestEstimateSmallModels runs every oracle-checked testdata model. Their
// weights are under a megabyte, so the peak is the Go runtime's and the
// engine code's own pages; the estimate (with the measured baseline as
// overhead) must still bound it within a few megabytes, which is what
// DefaultOverheadBytes pays for in the serving process.
func TestEstimateSmallModels(t *testing.T) {
	canMeasure(t)
	m, err := testmodels.Load()
	if err != nil {
		t.Fatal(err)
	}
	// The Go runtime dominates these: observed at most 1.7 MB over the
	// estimate with the arena-planned CPU backend and 6.5 MB with the plain
	// one that allocates per node; the bound holds either.
	const slack = 16 << 20
	for _, e := range m.Entries {
		t.Run(e.Name, func(t *testing.T) {
			shape := shapeOf(t, e.Path())
			ctx := min(shape.MaxContextTokens, 256)
			decode := min(40, ctx/4) // llama_dynamic's context is 32
			j := job{Dir: e.Path(), Context: ctx, Prompt: ctx - decode, Decode: decode}
			got := measure(t, j)
			b := fit.Estimate(shape, fit.Options{ContextTokens: ctx, OverheadBytes: got.BaselineBytes})
			t.Logf("estimate %.2f MB (weights %.2f, kv %.2f, work %.2f, gc %.2f, baseline %.2f); measured peak %.2f MB; measured − estimate %+.2f MB",
				mb(b.Total()), mb(b.WeightBytes), mb(b.KVBytes), mb(b.WorkBytes), mb(b.GCBytes), mb(b.OverheadBytes), mb(got.PeakBytes), mb(got.PeakBytes-b.Total()))
			if d := got.PeakBytes - b.Total(); d > slack || d < -slack {
				t.Errorf("measured peak %.1f MB is %+.1f MB from the estimate %.1f MB, want within %.0f MB", mb(got.PeakBytes), mb(d), mb(b.Total()), mb(slack))
			}
		})
	}
}

// TestDefaultOverhead checks DefaultOverheadBytes against what the serving
// process holds besides a model: the runtime and the largest real
// tokenizer (gemma3's 262k entries), whose load peaks well above what it
// keeps.
func TestDefaultOverhead(t *testing.T) {
	canMeasure(t)
	root := filepath.Join(testmodels.Root(), "..", "..", ".cache", "tokenizers")
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "tokenizer.json"))
	testenv.Need(t, "the real tokenizers (run tools/fetch-tokenizers.sh)", len(dirs) > 0)
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got := measure(t, job{Dir: dir, Tokenizer: dir})
			t.Logf("runtime %.1f MB; peak with the tokenizer loaded %.1f MB", mb(got.BaselineBytes), mb(got.PeakBytes))
			if got.PeakBytes > fit.DefaultOverheadBytes*3/4 {
				t.Errorf("peak %.1f MB leaves less than a quarter of DefaultOverheadBytes (%.1f MB) for the HTTP server and templates", mb(got.PeakBytes), mb(fit.DefaultOverheadBytes))
			}
		})
	}
}

// gpuModel is a synthetic checkpoint of 268 MB whose every matrix fits a
// storage binding (lavapipe allows 128 MiB).
var gpuModel = synthetic{Vocab: 32000, Hidden: 1024, Layers: 4, Heads: 8, HeadDim: 128, KVHeads: 8, Intermediate: 2816}

// TestGPULoadHoldsOneCopy loads the synthetic checkpoint on the gpu
// backend and wants the process to hold the weights once. On lavapipe
// device memory is host memory, as on a Mac's unified memory, so a load
// that kept the checkpoint's pages mapped after uploading them would hold
// two copies; the engine unmaps the checkpoint once a backend that copies
// its uploads has them (tensor.UploadCopier).
func TestGPULoadHoldsOneCopy(t *testing.T) {
	canMeasure(t)
	if testing.Short() {
		t.Skip("skipping: loads a 234 MB model on the gpu backend")
	}
	if m, err := engine.Load(filepath.Join(testmodels.Root(), "llama-f32"), engine.Options{Backend: "gpu"}); err != nil {
		testenv.Need(t, "a gpu backend ("+err.Error()+")", false)
	} else {
		m.Close()
	}
	dir := t.TempDir()
	gpuModel.write(t, dir)
	weightBytes := shapeOf(t, dir).WeightBytes
	// The driver's own memory (compiled pipelines, its allocator's pools)
	// is measured on a tiny model with the same passes and subtracted.
	tiny := measure(t, job{Dir: filepath.Join(testmodels.Root(), "llama-f32"), Backend: "gpu", Context: 64, Chunk: 16, Prompt: 16, Decode: 4})
	got := measure(t, job{Dir: dir, Backend: "gpu", Context: 64, Chunk: 16, Prompt: 16, Decode: 4})
	driver := tiny.LoadedBytes - tiny.BaselineBytes
	held := got.LoadedBytes - got.BaselineBytes - driver
	t.Logf("tiny model loaded: %.1f MB above its baseline (%s)", mb(driver), tiny.LoadedDetail)
	t.Logf("weights %.1f MB; loaded: %.1f MB above the baseline and the tiny model's (%.2f× the weights; %s)",
		mb(weightBytes), mb(held), float64(held)/float64(weightBytes), got.LoadedDetail)
	// One copy (the device buffers) plus what grows with the model: its
	// activations and the allocator's slack, 1.22× on lavapipe when this
	// was written. Keeping the checkpoint mapped measured 2.22×.
	if held > weightBytes*3/2 {
		t.Errorf("the process holds %.1f MB for %.1f MB of weights on the gpu backend: more than one copy", mb(held), mb(weightBytes))
	}
}
