package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/checkpoint"
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
