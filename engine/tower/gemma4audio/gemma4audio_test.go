package gemma4audio_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"hearth/engine/backend/cpu"
	"hearth/engine/tensor"
	"hearth/engine/tower/gemma4audio"
	"hearth/engine/tower/towertest"
	"hearth/internal/testmodels"
)

// TestGolden runs the golden clip's reference features through the tower
// on the cpu backend: the last hidden state and the embedded soft tokens
// within the tower tolerance, and the prompt with the soft tokens spliced
// into Gemma 4's decoder within the logit tolerance, greedy ids exact. The
// golden is transformers' default (sdpa) path, whose boolean mask is the
// sliding window; its eager path inverts the mask (docs/design/audio.md).
func TestGolden(t *testing.T) {
	g, err := towertest.LoadAudio()
	if err != nil {
		t.Fatal(err)
	}
	b := cpu.New(cpu.Options{})
	defer b.Close()
	bd, err := towertest.BindAudio(towertest.Dir(towertest.Gemma4AudioEntry), b)
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	f, err := g.Clip.Features()
	if err != nil {
		t.Fatal(err)
	}
	n := bd.Audio.Tokens(f)
	keep := 0
	for _, m := range g.Clip.TowerMask {
		keep += m
	}
	if n != keep || n != g.Cases[0].AudioTokens {
		t.Fatalf("%d soft tokens, the reference keeps %d and its prompt holds %d", n, keep, g.Cases[0].AudioTokens)
	}
	hidden, soft, err := bd.Run(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	dims := g.Clip.HiddenShape[1]
	d, err := towertest.Compare(hidden, g.Clip.Hidden[:n*dims], g.Tolerance.MaxAbsTower)
	if err != nil {
		t.Fatalf("last hidden state: %v", err)
	}
	t.Logf("last hidden state %d×%d: max |Δ| %.3g", n, dims, d)
	if d, err = towertest.Compare(soft, g.Clip.Soft, g.Tolerance.MaxAbsTower); err != nil {
		t.Fatalf("soft tokens: %v", err)
	}
	t.Logf("soft tokens %v: max |Δ| %.3g", g.Clip.SoftShape, d)
	for _, c := range g.Cases {
		row := c.AudioRow(bd.Audio.Prompt().Image)
		steps, err := bd.Decode(context.Background(), c, row, soft)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for s, want := range c.Logits {
			d, err := towertest.Compare(steps[s], want, g.Tolerance.MaxAbsLogit)
			if err != nil {
				t.Fatalf("%s step %d logits: %v", c.Name, s, err)
			}
			worst = max(worst, d)
			if id := argmax(steps[s]); id != c.GreedyIDs[s] {
				t.Fatalf("%s step %d: greedy id %d, want %d", c.Name, s, id, c.GreedyIDs[s])
			}
		}
		t.Logf("%s: %d steps, max |Δlogit| %.3g", c.Name, len(c.Logits), worst)
	}
}

func argmax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

// TestTokens: the soft-token count is the frame mask through two stride-2
// convolutions (Gemma4Processor's count), and 30 s make 750.
func TestTokens(t *testing.T) {
	for _, tt := range []struct{ frames, valid, want int }{
		{199, 199, 50}, {199, 198, 50}, {199, 196, 49}, {200, 197, 50}, {1, 1, 1}, {5, 0, 0}, {2999, 2999, 750},
	} {
		mask := make([]bool, tt.frames)
		for i := range tt.valid {
			mask[i] = true
		}
		for range 2 { // mask[::2]
			var m []bool
			for i := 0; i < len(mask); i += 2 {
				m = append(m, mask[i])
			}
			mask = m
		}
		ref := 0
		for _, v := range mask {
			if v {
				ref++
			}
		}
		if ref != tt.want {
			t.Fatalf("case %v: the reference's count is %d", tt, ref)
		}
		if got := gemma4audio.TokensFor(tt.frames, tt.valid); got != tt.want {
			t.Errorf("TokensFor(%d, %d) = %d, want %d", tt.frames, tt.valid, got, tt.want)
		}
	}
}

func TestParseConfig(t *testing.T) {
	for _, tt := range []struct{ in, err string }{
		{`{}`, ""},
		{`{"hidden_size":32,"num_attention_heads":2,"subsampling_conv_channels":[128,8]}`, ""},
		{`{"hidden_size":30,"num_attention_heads":4}`, "multiple"},
		{`{"subsampling_conv_channels":[128]}`, "2 sizes"},
		{`{"num_hidden_layers":0}`, "num_hidden_layers"},
		{`{"attention_context_left":1}`, "attention_context_left"},
		{`{"conv_kernel_size":1}`, "conv_kernel_size"},
		{`{"rms_norm_eps":0}`, "rms_norm_eps"},
	} {
		c, err := gemma4audio.ParseConfig(json.RawMessage(tt.in))
		if tt.err == "" {
			if err != nil {
				t.Errorf("ParseConfig(%s) = %v", tt.in, err)
			} else if c.Chunk != 12 || c.ContextLeft != 13 || c.Act != "silu" || math.Abs(c.ResidualWeight-0.5) > 0 {
				t.Errorf("defaults: %+v", c)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("ParseConfig(%s) = %v, want an error about %s", tt.in, err, tt.err)
		}
	}
}

// TestLayouts: the golden checkpoint rewritten as mlx-vlm lays a Gemma 4
// conversion out (no "model." prefix, the decoder under
// language_model.model., convolution weights channels-last) gives the same
// tower output; a convolution weight of another shape is a load error that
// names it.
func TestLayouts(t *testing.T) {
	g, err := towertest.LoadAudio()
	if err != nil {
		t.Fatal(err)
	}
	f, err := g.Clip.Features()
	if err != nil {
		t.Fatal(err)
	}
	mlx := func(ws []tensor.Weight) []tensor.Weight {
		for i := range ws {
			w := &ws[i]
			w.Name = strings.Replace(w.Name, "model.language_model.", "language_model.model.", 1)
			w.Name = strings.TrimPrefix(w.Name, "model.")
			if len(w.Shape) == 4 || strings.HasSuffix(w.Name, "depthwise_conv1d.weight") {
				w.Data, w.Shape = channelsLast(w.Data, w.Shape)
			}
		}
		return ws
	}
	dir := testmodels.Copy(t, towertest.Gemma4AudioEntry)
	testmodels.Rewrite(t, dir, mlx)
	b := cpu.New(cpu.Options{})
	defer b.Close()
	bd, err := towertest.BindAudio(dir, b)
	if err != nil {
		t.Fatal(err)
	}
	defer bd.Close()
	_, soft, err := bd.Run(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	d, err := towertest.Compare(soft, g.Clip.Soft, g.Tolerance.MaxAbsTower)
	if err != nil {
		t.Fatalf("soft tokens: %v", err)
	}
	t.Logf("mlx-vlm layout: soft tokens max |Δ| %.3g", d)

	bad := testmodels.Copy(t, towertest.Gemma4AudioEntry)
	testmodels.Rewrite(t, bad, func(ws []tensor.Weight) []tensor.Weight {
		for i := range ws {
			if strings.HasSuffix(ws[i].Name, "layer1.conv.weight") {
				s := ws[i].Shape
				ws[i].Shape = []int{s[0], s[1] * 9}
			}
		}
		return ws
	})
	if _, err := towertest.BindAudio(bad, b); err == nil || !strings.Contains(err.Error(), "layer1.conv.weight") {
		t.Fatalf("a [C1, C0·9] convolution weight loads: %v", err)
	}
}

// channelsLast moves axis 1 of a float32 [out, in, k…] weight last.
func channelsLast(data []byte, shape []int) ([]byte, []int) {
	out, in := shape[0], shape[1]
	k := 1
	for _, v := range shape[2:] {
		k *= v
	}
	dst := make([]byte, len(data))
	for o := range out {
		for i := range in {
			for j := range k {
				copy(dst[((o*k+j)*in+i)*4:((o*k+j)*in+i+1)*4], data[((o*in+i)*k+j)*4:])
			}
		}
	}
	return dst, append(append([]int{out}, shape[2:]...), in)
}
