package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/checkpoint"
	"hearth/engine/config"
	"hearth/internal/testenv"
	"hearth/internal/testmodels"
)

// TestSynthesize writes the tiny shape in every format and checks that the
// checkpoint is what the shape says, that writing is deterministic, and
// that a complete checkpoint is reused.
func TestSynthesize(t *testing.T) {
	for _, q := range Quants() {
		t.Run(q, func(t *testing.T) {
			a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
			for _, dir := range []string{a, b} {
				if err := Synthesize(dir, testShape, q); err != nil {
					t.Fatal(err)
				}
			}
			ck, err := checkpoint.Read(a)
			if err != nil {
				t.Fatal(err)
			}
			sum, cfg := ck.Weights, ck.Config
			s := shapes[testShape]
			q4, kv := s.NumAttentionHeads*s.HeadDim, s.NumKeyValueHeads*s.HeadDim
			perLayer := 4*s.HiddenSize*q4/2 + 2*s.HiddenSize*kv + 3*s.HiddenSize*s.IntermediateSize
			want := int64(s.VocabSize*s.HiddenSize + s.NumHiddenLayers*perLayer)
			if sum.ParamCount < want {
				t.Errorf("%d parameters, want at least %d", sum.ParamCount, want)
			}
			for _, f := range sum.Files {
				x, _ := os.ReadFile(filepath.Join(a, f))
				y, _ := os.ReadFile(filepath.Join(b, f))
				if !bytes.Equal(x, y) {
					t.Errorf("%s differs between two runs of the same shape", f)
				}
			}
			if cfg.HiddenSize != s.HiddenSize || cfg.NumHiddenLayers != s.NumHiddenLayers || (cfg.Quantization != nil) != (q != "bf16") {
				t.Errorf("config.json: hidden %d, layers %d, quantization %s", cfg.HiddenSize, cfg.NumHiddenLayers, cfg.Quantization)
			}
			st, _ := os.Stat(filepath.Join(a, "config.json"))
			if err := Synthesize(a, testShape, q); err != nil {
				t.Fatal(err)
			}
			if st2, _ := os.Stat(filepath.Join(a, "config.json")); !st2.ModTime().Equal(st.ModTime()) {
				t.Error("a complete checkpoint was rewritten instead of reused")
			}
		})
	}
}

// TestShapeConfigs parses every shape's config.json as the engine does.
func TestShapeConfigs(t *testing.T) {
	for _, name := range Shapes() {
		s := shapes[name]
		for _, qn := range Quants() {
			q, _ := lookupQuant(qn)
			raw, err := json.Marshal(s.config(q))
			if err != nil {
				t.Fatal(err)
			}
			c, err := config.Parse(raw, nil)
			if err != nil {
				t.Fatalf("%s %s: %v", name, qn, err)
			}
			window := 0
			if s.Gemma4 != nil {
				window = s.Gemma4.SlidingWindow
			}
			if s.Gemma3 != nil {
				window = s.Gemma3.SlidingWindow
			}
			if c.HeadDim != s.HeadDim || c.NumKeyValueHeads != s.NumKeyValueHeads || c.TieWordEmbeddings != s.TieWordEmbeddings || c.SlidingWindow != window {
				t.Errorf("%s: parsed head_dim %d, kv heads %d, tied %v, window %d", name, c.HeadDim, c.NumKeyValueHeads, c.TieWordEmbeddings, c.SlidingWindow)
			}
		}
	}
	if _, err := lookupShape("gpt-5"); err == nil || !strings.Contains(err.Error(), "llama-3.2-1b") {
		t.Errorf("unknown shape error = %v, want one listing the shapes", err)
	}
}

// TestRun runs the whole benchmark on the tiny shape and checks the JSON
// report has every field `hearth bench --json` promises.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	rep, err := Run(context.Background(), Options{
		Synthetic: testShape, Quant: "q4g64", CacheDir: t.TempDir(),
		Prompts: []int{4, 9}, Decode: 3, Repeats: 2, BandwidthBytes: 1 << 20, JSON: true, Concurrency: []int{1, 3},
	}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(out.Bytes(), &obj); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out.String())
	}
	for _, key := range []string{"decode_tok_s", "prefill_tok_s", "ttft_ms", "peak_rss_bytes", "bandwidth_gb_s", "weight_bytes_per_token", "decode_fraction_of_bound"} {
		if _, ok := obj[key]; !ok {
			t.Errorf("JSON report lacks %q", key)
		}
	}
	if rep.DecodeTokS <= 0 || rep.PrefillTokS["9"] <= 0 || rep.TTFTMs["4"] <= 0 || rep.BandwidthGBs <= 0 {
		t.Errorf("report has empty measurements: %+v", rep)
	}
	if len(rep.Samples.DecodeTokS) != 2 || len(rep.Samples.TTFTMs["9"]) != 2 {
		t.Errorf("samples %+v, want 2 repeats each", rep.Samples)
	}
	// tied embeddings: every byte is read per token
	if rep.WeightBytesPerToken != rep.WeightBytes {
		t.Errorf("tied model reads %d of %d bytes per token, want all", rep.WeightBytesPerToken, rep.WeightBytes)
	}
	if got := rep.DecodeFractionOfBound; got <= 0 {
		t.Errorf("decode fraction of bound = %v", got)
	}
	if len(rep.Batched) != 2 || rep.Batched[1].Streams != 3 || rep.Batched[0].Speedup != 1 || len(rep.Samples.BatchedTokS[1]) != 2 {
		t.Errorf("batched %+v (samples %v), want 1 and 3 streams, 2 runs each, speedups against the first", rep.Batched, rep.Samples.BatchedTokS)
	}
	for _, b := range rep.Batched {
		if b.AggregateTokS <= 0 || math.Abs(b.PerStreamTokS*float64(b.Streams)-b.AggregateTokS) > 1e-9*b.AggregateTokS {
			t.Errorf("batched %+v: per stream is not the aggregate over the streams", b)
		}
	}
	if rep.HostQueueUs != 0 {
		t.Errorf("the cpu backend runs no step ahead, yet host queue time %v µs", rep.HostQueueUs)
	}
}

func TestRunErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Options
		want string
	}{
		{"neither", Options{}, "name a model directory or a synthetic shape"},
		{"both", Options{Model: "x", Synthetic: testShape}, "not both"},
		{"shape", Options{Synthetic: "nope", CacheDir: t.TempDir()}, `unknown synthetic shape "nope"`},
		{"quant", Options{Synthetic: testShape, Quant: "q3", CacheDir: t.TempDir()}, `unknown quantization "q3"`},
		{"prompt", Options{Synthetic: testShape, Prompts: []int{0}}, "prompt length 0"},
		{"missing", Options{Model: filepath.Join(t.TempDir(), "none")}, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.opt, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestWeightBytesUntied checks that an untied embedding table is not counted
// as read per token.
func TestWeightBytesUntied(t *testing.T) {
	dir := t.TempDir()
	s := shapes[testShape]
	s.Name, s.TieWordEmbeddings = "untied", false
	if err := synthesize(dir, s, quants[2]); err != nil {
		t.Fatal(err)
	}
	ck, err := checkpoint.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	r.weightBytes(ck)
	embed := int64(2 * s.VocabSize * s.HiddenSize)
	if r.WeightBytes-r.WeightBytesPerToken != embed {
		t.Errorf("per token %d of %d bytes, want all but the %d-byte embedding", r.WeightBytesPerToken, r.WeightBytes, embed)
	}
}

// TestRunGPU runs the benchmark on the gpu backend with a profile: the
// bound comes from the device's own read rate, and the profile names the
// kernels of a decode step. On the cpu backend a profile is refused.
func TestRunGPU(t *testing.T) {
	m, err := engine.Load(filepath.Join(testmodels.Root(), "llama-f32"), engine.Options{Backend: "gpu"})
	if err != nil {
		testenv.Need(t, "a gpu backend ("+err.Error()+")", false)
	}
	m.Close()
	opt := Options{Synthetic: testShape, Quant: "q4g64", CacheDir: t.TempDir(), Prompts: []int{4}, Decode: 3, Repeats: 1,
		BandwidthBytes: 1 << 20, Profile: true, Engine: engine.Options{Backend: "gpu"}}
	var out bytes.Buffer
	rep, err := Run(context.Background(), opt, &out)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Bandwidth.Device || rep.BandwidthGBs <= 0 || rep.DecodeTokS <= 0 {
		t.Errorf("bandwidth %+v, decode %v tok/s: want a device measurement", rep.Bandwidth, rep.DecodeTokS)
	}
	kinds := map[string]bool{}
	for _, k := range rep.DecodeProfile {
		kinds[strings.Fields(k.Label)[0]] = k.Count > 0 && k.Time > 0
	}
	for _, want := range []string{"matvec", "Attention", "Argmax"} {
		if !kinds[want] {
			t.Errorf("profile %v lacks a timed %s kernel", rep.DecodeProfile, want)
		}
	}
	if rep.HostQueueUs <= 0 || rep.HostWaitUs <= 0 || len(rep.Samples.HostQueueUs) != 1 {
		t.Errorf("host per token: queue %v µs, wait %v µs, samples %v: want the step-ahead split", rep.HostQueueUs, rep.HostWaitUs, rep.Samples.HostQueueUs)
	}
	if !strings.Contains(out.String(), "device kernels") || !strings.Contains(out.String(), "profile    one decode step") || !strings.Contains(out.String(), "host       per token") {
		t.Errorf("table:\n%s", out.String())
	}
	opt.Engine.Backend = "cpu"
	if _, err := Run(context.Background(), opt, io.Discard); err == nil || !strings.Contains(err.Error(), "does not time its kernels") {
		t.Errorf("a cpu profile: %v, want a refusal", err)
	}
}
