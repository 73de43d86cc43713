package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/checkpoint"
	"hearth/engine/config"
	"hearth/engine/families"
	"hearth/engine/family"
	"hearth/engine/family/gemma4"
	"hearth/engine/family/qwen35"
	"hearth/engine/fit"
	"hearth/internal/testenv"
	"hearth/internal/testmodels"
)

// targetedShapes are the shapes that run a targeted family's graph.
func targetedShapes(t *testing.T) []Shape {
	var out []Shape
	for _, name := range Shapes() {
		if s := shapes[name]; s.Gemma4 != nil || s.Qwen35 != nil {
			out = append(out, s)
		}
	}
	if len(out) < 2 {
		t.Fatalf("targeted shapes %v: want Gemma 4 and Qwen 3.5 ones", out)
	}
	return out
}

// TestTargetedShapeConfigs checks the Gemma 4 and Qwen 3.5 shapes at their
// real size without writing a byte of weights: the config resolves to the
// targeted family with the layer structure the shape names, every matrix
// splits into whole quantization groups, and (Qwen 3.5) the tensors the
// shape writes are exactly the parameters the family binds.
func TestTargetedShapeConfigs(t *testing.T) {
	for _, s := range targetedShapes(t) {
		t.Run(s.Name, func(t *testing.T) {
			q, _ := lookupQuant("q4g64")
			raw, _ := json.Marshal(s.config(q))
			c, err := config.Parse(raw, nil)
			if err != nil {
				t.Fatal(err)
			}
			f, err := families.Resolve(c)
			want := &qwen35.Family
			if s.Gemma4 != nil {
				want = &gemma4.Family
			}
			if err != nil || f != want || f.Tier != family.Targeted {
				t.Fatalf("Resolve = %v, %v; want the targeted %s family", f, err, want.Name)
			}
			var params int64
			for _, sh := range s.shards() {
				for _, tn := range sh {
					if towerSide(tn.name) {
						continue // the decoder's count is checked; the towers' are their configs'
					}
					if tn.cols == 0 {
						params += int64(tn.rows)
						continue
					}
					params += int64(tn.rows) * int64(tn.cols)
					for _, qn := range []string{"q4g64", "q8g32"} {
						if q, _ := lookupQuant(qn); tn.cols%q.Group != 0 {
							t.Errorf("%s: %d columns do not split into %s groups", tn.name, tn.cols, qn)
						}
					}
				}
			}
			layers := families.Shape(c, 1).Layers
			switch {
			case s.Qwen35 != nil:
				total, _, err := qwen35.ParamCount(c)
				if err != nil || total != params {
					t.Errorf("the shape writes %d parameters, the family binds %d (%v)", params, total, err)
				}
				var full int
				for _, l := range layers {
					if l.Kind == fit.Full {
						full++
					}
				}
				if full != s.NumHiddenLayers/s.Qwen35.FullEvery || len(layers) != s.NumHiddenLayers {
					t.Errorf("%d full-attention layers of %d", full, len(layers))
				}
			case s.Gemma4 != nil:
				// the shared layers keep no cache; the others a sliding one
				// at head_dim or a full one at global_head_dim
				g := s.Gemma4
				// the count engine/family/gemma4's TestPublishedConfigs
				// pins for the E4B config, which the family binds
				if want := map[string]int64{"gemma-4-e4b": 7_463_013_418}[s.Name]; want != 0 && params != want {
					t.Errorf("the shape writes %d parameters, the E4B config binds %d", params, want)
				}
				if len(layers) != s.NumHiddenLayers-g.KVSharedLayers {
					t.Errorf("%d cache layers, want %d", len(layers), s.NumHiddenLayers-g.KVSharedLayers)
				}
				for i, l := range layers {
					full := (i+1)%g.FullEvery == 0
					if full && (l.Kind != fit.Full || l.HeadDim != g.GlobalHeadDim) || !full && (l.Kind != fit.Sliding || l.HeadDim != s.HeadDim || l.Window != g.SlidingWindow) {
						t.Errorf("cache layer %d: %+v", i, l)
					}
				}
			}
			t.Logf("%.3fB parameters", float64(params)/1e9)
		})
	}
}

// tinyOf is s with its structure kept (family, layer types, shared-KV
// layers, per-layer inputs, head sizes, DeltaNet head sizes) and its
// widths, counts and vocabulary cut down, so a test can write and run it.
func tinyOf(s Shape) Shape {
	t := s
	t.Name = "test-" + s.Name
	t.HiddenSize, t.IntermediateSize, t.VocabSize = 64, 128, 320
	t.NumAttentionHeads, t.NumKeyValueHeads = 2, 1
	switch {
	case s.Gemma4 != nil:
		g := *s.Gemma4
		t.NumHiddenLayers = 2 * g.FullEvery
		g.KVSharedLayers = min(g.KVSharedLayers, g.FullEvery)
		g.PerLayerVocab, g.SlidingWindow = t.VocabSize, 4
		if g.Audio != nil {
			a := testAudio // its tokens fit the tiny vocabulary
			g.Audio = &a
		}
		if g.Vision != nil {
			v := testGemma4Vision
			g.Vision = &v
		}
		t.Gemma4 = &g
	case s.Qwen35 != nil:
		d := *s.Qwen35
		t.NumHiddenLayers = 2 * d.FullEvery
		d.KeyHeads, d.ValueHeads = 1, 2
		if d.Vision != nil {
			v := testQwenVision
			v.MRopeSection = d.Vision.MRopeSection // the head size is kept
			d.Vision = &v
		}
		t.Qwen35 = &d
	}
	return t
}

// TestTargetedShapesRun writes a tiny variant of each Gemma 4 and Qwen 3.5
// shape and runs the benchmark on it (a prefill longer than the tiny
// sliding window, then decode steps) on the cpu backend and, where there
// is one, the gpu backend, so the shapes' tensors keep binding to the
// families' graphs.
func TestTargetedShapesRun(t *testing.T) {
	gpu := true
	if m, err := engine.Load(filepath.Join(testmodels.Root(), "llama-f32"), engine.Options{Backend: "gpu"}); err != nil {
		gpu = false
	} else {
		m.Close()
	}
	cacheDir := t.TempDir()
	for _, s := range targetedShapes(t) {
		tiny := tinyOf(s)
		shapes[tiny.Name] = tiny
		t.Cleanup(func() { delete(shapes, tiny.Name) })
		for _, backend := range []string{"cpu", "gpu"} {
			t.Run(s.Name+"/"+backend, func(t *testing.T) {
				if backend == "gpu" && !gpu {
					testenv.Need(t, "a gpu backend", false)
				}
				var out bytes.Buffer
				rep, err := Run(context.Background(), Options{
					Synthetic: tiny.Name, Quant: "q4g64", CacheDir: cacheDir, Engine: engine.Options{Backend: backend},
					Prompts: []int{9}, Decode: 3, Repeats: 1, BandwidthBytes: 1 << 20,
				}, &out)
				if err != nil {
					t.Fatal(err)
				}
				if rep.DecodeTokS <= 0 || rep.PrefillTokS["9"] <= 0 || rep.Params <= 0 {
					t.Errorf("report has empty measurements: %+v", rep)
				}
				if !strings.Contains(out.String(), tiny.Name) {
					t.Errorf("table does not name the shape:\n%s", out.String())
				}
				ck, err := checkpoint.Read(filepath.Join(cacheDir, tiny.Name+"-q4g64"))
				if err != nil {
					t.Fatal(err)
				}
				if ck.Config.ModelType != s.ModelType || ck.Config.NumHiddenLayers != tiny.NumHiddenLayers {
					t.Errorf("config %s with %d layers", ck.Config.ModelType, ck.Config.NumHiddenLayers)
				}
				// per token: everything but the per-layer input table
				// (read a row at a time), an untied embedding table and
				// the towers with their embedders (run once per clip or
				// picture)
				var rowWise int64
				for _, ti := range ck.Weights.Tensors {
					if strings.Contains(ti.Name, "embed_tokens_per_layer") || (!tiny.TieWordEmbeddings && strings.Contains(ti.Name, "embed_tokens")) ||
						strings.Contains(ti.Name, "audio_tower.") || strings.Contains(ti.Name, "embed_audio.") ||
						strings.Contains(ti.Name, "vision_tower.") || strings.Contains(ti.Name, "embed_vision.") || strings.Contains(ti.Name, ".visual.") {
						rowWise += ti.Length
					}
				}
				vision := s.Gemma4 != nil && s.Gemma4.Vision != nil || s.Qwen35 != nil && s.Qwen35.Vision != nil
				if im := rep.Image; (im != nil) != vision || im != nil && (im.Tokens <= 0 || im.TTFTMs <= im.EncodeMs) {
					t.Errorf("image measurement %+v for a shape with a vision tower: %v", im, vision)
				}
				if s.Gemma4 != nil && rowWise == 0 {
					t.Error("no per-layer input table")
				}
				if rep.WeightBytesPerToken != rep.WeightBytes-rowWise {
					t.Errorf("per token %d of %d bytes, want all but the %d read a row at a time", rep.WeightBytesPerToken, rep.WeightBytes, rowWise)
				}
			})
		}
	}
}
