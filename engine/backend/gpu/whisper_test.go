package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"hearth/engine/backend/cpu"
	"hearth/engine/backend/gpu"
	"hearth/engine/tensor"
	"hearth/engine/whisper"
	"hearth/engine/whisper/whispertest"
	"hearth/media"
)

// TestWhisperGolden runs the reference's Whisper golden (encoder, per-step
// logits, greedy ids with and without timestamps) on the gpu backend.
func TestWhisperGolden(t *testing.T) {
	g, err := whispertest.Load()
	if errors.Is(err, whispertest.ErrNoGolden) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	b := newGPU(t, gpu.Options{})
	defer b.Close()
	m, err := whisper.Load(whispertest.Dir(), b)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	enc, lg := whispertest.Check(context.Background(), g, m, t.Errorf)
	t.Logf("gpu: encoder max |diff| %.3g, logits max |diff| %.3g", enc, lg)
}

// TestWhisperMatchesCPU: a random Whisper checkpoint gives the cpu
// backend's encoder output and logits (within 1e-4) and the same greedy
// ids, with and without timestamps, on the gpu backend.
func TestWhisperMatchesCPU(t *testing.T) {
	dir := t.TempDir()
	if err := whispertest.Write(dir, 21, false); err != nil {
		t.Fatal(err)
	}
	gb := newGPU(t, gpu.Options{})
	defer gb.Close()
	cb := cpu.New(cpu.Options{})
	defer cb.Close()
	var ms [2]*whisper.Model
	for i, b := range []tensor.Backend{cb, gb} {
		m, err := whisper.Load(dir, b)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ms[i] = m
	}
	r := rand.New(rand.NewPCG(5, 5))
	f := media.Features{Bins: whispertest.Mels, Frames: 2 * whispertest.SourcePos, Valid: 2 * whispertest.SourcePos}
	f.Data = make([]float32, f.Bins*f.Frames)
	for i := range f.Data {
		f.Data[i] = float32(r.NormFloat64() * 0.5)
	}
	ctx := context.Background()
	var hidden [2][]float32
	for i, m := range ms {
		hidden[i] = make([]float32, whispertest.SourcePos*whispertest.Hidden)
		if err := m.Encode(ctx, f, hidden[i]); err != nil {
			t.Fatal(err)
		}
	}
	if d := whispertest.MaxDiff(hidden[0], hidden[1]); d > 1e-4 {
		t.Errorf("encoder: gpu vs cpu max |diff| %.3g", d)
	}
	for _, ts := range []bool{false, true} {
		var res [2]*whisper.Result
		for i, m := range ms {
			var err error
			if res[i], err = m.Decode(ctx, f, whisper.Options{Language: "en", Timestamps: ts}); err != nil {
				t.Fatal(err)
			}
		}
		if fmt.Sprint(res[0].Tokens) != fmt.Sprint(res[1].Tokens) {
			t.Errorf("timestamps %v: gpu ids %v, cpu ids %v", ts, res[1].Tokens, res[0].Tokens)
		}
		// Teacher-forced logits along the cpu's ids.
		seq := append(append([]int32(nil), res[0].Prefix...), res[0].Tokens...)
		var logits [2][]float32
		for i, m := range ms {
			logits[i] = make([]float32, whispertest.Vocab)
			if err := m.Step(ctx, seq, 0, logits[i]); err != nil {
				t.Fatal(err)
			}
		}
		if d := whispertest.MaxDiff(logits[0], logits[1]); d > 1e-4 {
			t.Errorf("timestamps %v: logits gpu vs cpu max |diff| %.3g", ts, d)
		}
	}
}
