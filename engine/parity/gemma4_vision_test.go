package parity

import (
	"context"
	"fmt"
	"testing"

	"hearth/engine"
	"hearth/engine/backend/cpu"
	"hearth/engine/tensor"
	"hearth/engine/tower/gemma4vision"
	"hearth/engine/tower/towertest"
)

// TestGemma4VisionTower holds Gemma 4's vision tower to transformers: for
// each golden picture, the encoder's output (its first values), the
// vision model's pooled and standardized last_hidden_state and the
// embedder's output (get_image_features), from the processor's patch rows.
// The entry's clip bounds are set so that they clip (unclipped linears
// move the features by about 0.4).
func TestGemma4VisionTower(t *testing.T) {
	g, err := towertest.Load(towertest.Gemma4Entry)
	if err != nil {
		t.Fatal(err)
	}
	b := cpu.New(cpu.Options{})
	checkTower(t, g, towertest.Dir(towertest.Gemma4Entry), b)
	checkGemma4Encoder(t, g, cpu.New(cpu.Options{}))
}

// checkGemma4Encoder compares the encoder's output before the pooler with
// the golden's first values.
func checkGemma4Encoder(t *testing.T, g *towertest.Golden, b tensor.Backend) {
	defer b.Close()
	bd, err := towertest.Bind(towertest.Dir(towertest.Gemma4Entry), b)
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	tw := bd.Vision.(*gemma4vision.Tower)
	for i, im := range g.Images {
		gr := tensor.NewGraph(b)
		enc, _, _, err := tw.Forward(gr, im.Pixels())
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Run(context.Background(), gr, enc); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, tensor.Elements(gr.Shape(enc)))
		if err := b.Read(enc, got); err != nil {
			t.Fatal(err)
		}
		if len(im.EncoderHead) == 0 || len(got) < len(im.EncoderHead) {
			t.Fatalf("image %d: %d encoder values for a head of %d", i, len(got), len(im.EncoderHead))
		}
		worst, err := towertest.Compare(got[:len(im.EncoderHead)], im.EncoderHead, g.Tolerance.MaxAbsTower)
		if err != nil {
			t.Fatalf("image %d encoder%v", i, err)
		}
		t.Logf("image %d encoder (first %d values): max |Δ| %.3g", i, len(im.EncoderHead), worst)
	}
}

// TestGemma4VisionPrompt holds Gemma 4's image prompts to transformers:
// the soft tokens spliced in (the placeholders embedded as the pad id,
// for the per-layer inputs too), each picture's tokens seeing each other
// on the sliding layers only, then greedy decode steps; every logit within
// the tolerance, the greedy ids exact, in one pass and in chunks of 5
// that end before each picture.
func TestGemma4VisionPrompt(t *testing.T) {
	g, err := towertest.Load(towertest.Gemma4Entry)
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{512, 5} {
		t.Run(fmt.Sprintf("chunk%d", chunk), func(t *testing.T) {
			checkVisionPrompts(t, g, towertest.Dir(towertest.Gemma4Entry), engine.Options{Backend: "cpu", ChunkTokens: chunk})
		})
	}
}
