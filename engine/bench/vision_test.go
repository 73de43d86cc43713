package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/checkpoint"
	"hearth/engine/tower/gemma4vision"
	"hearth/engine/tower/qwenvl"
	"hearth/media"
)

// TestRunImage benchmarks the tiny Gemma 3 with a vision tower: the
// engine loads the synthetic checkpoint with its tower, the report times
// one picture's encode and a prompt holding it, and the tower's weights
// are not counted as read by each decoded token.
func TestRunImage(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	rep, err := Run(context.Background(), Options{
		Synthetic: testVisionShape, Quant: "q4g64", CacheDir: dir,
		Prompts: []int{4}, Decode: 3, Repeats: 2, BandwidthBytes: 1 << 20,
	}, &out)
	if err != nil {
		t.Fatal(err)
	}
	g := shapes[testVisionShape].Gemma3
	im := rep.Image
	if im == nil {
		t.Fatalf("no image measurement for a model with a vision tower:\n%s", out.String())
	}
	if im.Tokens != g.ImageTokens || im.PromptTokens != 2*ImagePromptText+g.ImageTokens+2 {
		t.Errorf("image tokens %d in a %d-token prompt, want %d in %d", im.Tokens, im.PromptTokens, g.ImageTokens, 2*ImagePromptText+g.ImageTokens+2)
	}
	if im.EncodeMs <= 0 || im.TTFTMs <= im.EncodeMs || len(rep.Samples.ImageTTFTMs) != 2 {
		t.Errorf("encode %v ms, TTFT %v ms, samples %v: want TTFT past the encode, 2 samples", im.EncodeMs, im.TTFTMs, rep.Samples.ImageTTFTMs)
	}
	if rep.Audio != nil || strings.Contains(out.String(), "audio  ") {
		t.Errorf("an audio measurement for a model without an audio tower: %+v", rep.Audio)
	}
	if !strings.Contains(out.String(), "image      a 1280×960 picture") {
		t.Errorf("table lacks the image line:\n%s", out.String())
	}

	ck, err := checkpoint.Read(dir + "/" + testVisionShape + "-q4g64")
	if err != nil {
		t.Fatal(err)
	}
	var tower int64
	for _, tn := range ck.Weights.Tensors {
		if checkpoint.TowerTensor(tn.Name) != 0 || strings.HasPrefix(tn.Name, "multi_modal_projector.") {
			tower += tn.Length
		}
	}
	if tower == 0 || rep.WeightBytesPerToken != rep.WeightBytes-tower {
		t.Errorf("per token %d of %d bytes, want all but the tower's %d", rep.WeightBytesPerToken, rep.WeightBytes, tower)
	}
	m, err := engine.LoadCheckpoint(ck, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.HasVision() {
		t.Error("the synthetic checkpoint's vision tower did not load")
	}
}

// TestRunGriddedVision benchmarks the tiny Qwen 3.5 and Gemma 4 with their
// vision towers, whose soft-token count follows the picture: the engine
// loads each synthetic checkpoint with its tower and processor, the
// report gives the picture's soft tokens and grid (the tiny processors'
// sizes, worked out by hand below), in the table and the JSON, and the
// tower's weights are not counted as read by each decoded token.
func TestRunGriddedVision(t *testing.T) {
	for _, tc := range []struct {
		shape string
		grid  []int
		tower []string // its tensors' prefixes
	}{
		// smart_resize: 1280×960 in multiples of 16 is over 128·96
		// pixels, so scaled by √100 and floored: 128×96, 16×12 patches,
		// 8×6 tokens
		{testQwenVisionShape, []int{1, 6, 8}, []string{"model.visual."}},
		// Gemma4ImageProcessor: 70·9 = 630 patches of 8 → 40320 pixels,
		// 1280×960 scaled by √(40320/1228800) to 231.9×173.9, floored to
		// multiples of 24: 216×168, 27×21 patches, 9×7 tokens
		{testGemma4VisionShape, []int{1, 7, 9}, []string{"model.vision_tower.", "model.embed_vision."}},
	} {
		t.Run(tc.shape, func(t *testing.T) {
			dir := t.TempDir()
			var out bytes.Buffer
			rep, err := Run(context.Background(), Options{
				Synthetic: tc.shape, Quant: "q4g64", CacheDir: dir,
				Prompts: []int{4}, Decode: 3, Repeats: 2, BandwidthBytes: 1 << 20,
			}, &out)
			if err != nil {
				t.Fatal(err)
			}
			im := rep.Image
			if im == nil {
				t.Fatalf("no image measurement for a model with a vision tower:\n%s", out.String())
			}
			tokens := tc.grid[0] * tc.grid[1] * tc.grid[2]
			if im.Tokens != tokens || !reflect.DeepEqual(im.Grid, tc.grid) || im.PromptTokens != 2*ImagePromptText+tokens+2 {
				t.Errorf("%d soft tokens (grid %v) in a %d-token prompt, want %d (%v) in %d", im.Tokens, im.Grid, im.PromptTokens, tokens, tc.grid, 2*ImagePromptText+tokens+2)
			}
			if im.EncodeMs <= 0 || im.TTFTMs <= im.EncodeMs || len(rep.Samples.ImageEncodeMs) != 2 || len(rep.Samples.ImageTTFTMs) != 2 {
				t.Errorf("encode %v ms, TTFT %v ms, samples %v, %v: want TTFT past the encode, 2 samples each", im.EncodeMs, im.TTFTMs, rep.Samples.ImageEncodeMs, rep.Samples.ImageTTFTMs)
			}
			if !strings.Contains(out.String(), "image      a 1280×960 picture: ") || !strings.Contains(out.String(), fmt.Sprintf("%d soft tokens", tokens)) || rep.Audio != nil {
				t.Errorf("table lacks the image line (or has an audio one):\n%s", out.String())
			}
			var js bytes.Buffer
			if err := rep.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			var back struct {
				Image struct {
					Grid   []int   `json:"grid"`
					Tokens int     `json:"tokens"`
					TTFTMs float64 `json:"ttft_ms"`
				} `json:"image"`
			}
			if err := json.Unmarshal(js.Bytes(), &back); err != nil || !reflect.DeepEqual(back.Image.Grid, tc.grid) || back.Image.Tokens != tokens || back.Image.TTFTMs != im.TTFTMs {
				t.Errorf("JSON image %+v (%v), want the report's", back.Image, err)
			}

			ck, err := checkpoint.Read(filepath.Join(dir, tc.shape+"-q4g64"))
			if err != nil {
				t.Fatal(err)
			}
			var tower, ple int64
			for _, tn := range ck.Weights.Tensors {
				for _, p := range tc.tower {
					if strings.HasPrefix(tn.Name, p) {
						tower += tn.Length
					}
				}
				if strings.HasPrefix(tn.Name, "model.language_model.embed_tokens_per_layer.") {
					ple += tn.Length // Gemma 4's, read a row at a time
				}
			}
			if tower == 0 || rep.WeightBytesPerToken != rep.WeightBytes-tower-ple {
				t.Errorf("per token %d of %d bytes, want all but the tower's %d and the per-layer table's %d", rep.WeightBytesPerToken, rep.WeightBytes, tower, ple)
			}
			m, err := engine.LoadCheckpoint(ck, engine.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if !m.HasVision() || m.HasAudio() {
				t.Errorf("vision %v, audio %v: want the vision tower alone", m.HasVision(), m.HasAudio())
			}
		})
	}
}

// TestVisionShapesPublished: the full-size shapes' vision_config, as the
// engine's towers read it, is transformers 5.17's defaults (Qwen's with
// the 4B's out_hidden_size, Gemma 4's with its clipped linears), their
// decoders are the text shapes', and their processors make the bench
// picture the soft tokens worked out by hand: Qwen's smart_resize keeps
// 1280×960 (multiples of 32 within the bounds), 80×60 patches → 40×30
// tokens; Gemma 4's budget of 280·9 patches of 16 scales it by
// √(645120/1228800) to 927.4×695.6, floored to multiples of 48: 912×672,
// 57×42 patches → 19×14 tokens.
func TestVisionShapesPublished(t *testing.T) {
	q, _ := lookupQuant("q4g64")
	pic := benchPicture()
	grid := func(t *testing.T, s Shape) [3]int {
		dir := t.TempDir()
		if err := s.writeProcessor(dir); err != nil {
			t.Fatal(err)
		}
		proc, err := media.LoadImageProcessor(dir)
		if err != nil {
			t.Fatal(err)
		}
		px, err := proc.Image(pic)
		if err != nil {
			t.Fatal(err)
		}
		return px.Grid
	}
	t.Run("qwen3.5-4b-vision", func(t *testing.T) {
		s := shapes["qwen3.5-4b-vision"]
		raw, _ := json.Marshal(s.config(q)["vision_config"])
		got, err := qwenvl.ParseConfig(raw)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := qwenvl.ParseConfig(nil)
		want.OutHidden, want.Deepstack, want.Rope.Type = 2560, []int{}, "axial"
		if !reflect.DeepEqual(got, want) {
			t.Errorf("vision_config %+v, want transformers' defaults with the 4B's width %+v", got, want)
		}
		text, base := s.qwen35Text(), shapes["qwen3.5-4b"]
		text.Name = base.Name
		if !reflect.DeepEqual(text, base) {
			t.Errorf("the decoder %+v is not qwen3.5-4b's %+v", text, base)
		}
		if g := grid(t, s); g != [3]int{1, 60, 80} {
			t.Errorf("patch grid %v, want [1 60 80] (1200 soft tokens)", g)
		}
	})
	t.Run("gemma-4-e4b-vision", func(t *testing.T) {
		s := shapes["gemma-4-e4b-vision"]
		raw, _ := json.Marshal(s.config(q)["vision_config"])
		got, err := gemma4vision.ParseConfig(raw)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := gemma4vision.ParseConfig(nil)
		want.Clipped = true
		if !reflect.DeepEqual(got, want) {
			t.Errorf("vision_config %+v, want transformers' defaults with clipped linears %+v", got, want)
		}
		text, e4b := s.gemma4Text(), shapes["gemma-4-e4b"]
		text.Name = e4b.Name
		if !reflect.DeepEqual(text, e4b) {
			t.Errorf("the decoder %+v is not gemma-4-e4b's %+v", text, e4b)
		}
		if g := grid(t, s); g != [3]int{1, 42, 57} {
			t.Errorf("patch grid %v, want [1 42 57] (266 soft tokens)", g)
		}
	})
}
