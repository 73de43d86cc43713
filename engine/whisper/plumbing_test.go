package whisper_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"hearth/engine/whisper"
	"hearth/engine/whisper/whispertest"
)

func writeF32(t *testing.T, path string, v []float32) {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	buf := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
	}
	zw.Write(buf)
	zw.Close()
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenChecker writes a golden in the oracle script's format from
// this package's own run and holds the checker to it: it passes on its
// own numbers and fails on a changed id, so the reference's golden, once
// made, is read and compared the way the script writes it.
func TestGoldenChecker(t *testing.T) {
	dir := t.TempDir()
	if err := whispertest.Write(dir, 8, false); err != nil {
		t.Fatal(err)
	}
	m := load(t, dir)
	ctx := context.Background()
	frames, mels := 2*whispertest.SourcePos, whispertest.Mels
	f := noise(frames, mels, 8)
	byMel := make([]float32, len(f.Data))
	for tt := 0; tt < frames; tt++ {
		for c := 0; c < mels; c++ {
			byMel[c*frames+tt] = f.Data[tt*mels+c]
		}
	}
	writeF32(t, filepath.Join(dir, "features.f32.gz"), byMel)
	hidden := make([]float32, whispertest.SourcePos*whispertest.Hidden)
	if err := m.Encode(ctx, f, hidden); err != nil {
		t.Fatal(err)
	}
	writeF32(t, filepath.Join(dir, "encoder.f32.gz"), hidden)
	var all []float32
	var cases []map[string]any
	for _, c := range []struct {
		name string
		opt  whisper.Options
	}{
		{"en_notimestamps", whisper.Options{Language: "en", MaxTokens: 8}},
		{"en_timestamps", whisper.Options{Language: "en", Timestamps: true, MaxTokens: 8}},
		{"de_translate_prompt", whisper.Options{Language: "de", Task: "translate", Prompt: "hello", MaxTokens: 8}},
	} {
		res, err := m.Decode(ctx, f, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		seq := append([]int32(nil), res.Prefix...)
		logits := make([]float32, whispertest.Vocab)
		for _, id := range res.Tokens {
			if err := m.Step(ctx, seq, 0, logits); err != nil {
				t.Fatal(err)
			}
			all = append(all, logits...)
			seq = append(seq, id)
		}
		var segs []map[string]any
		for _, s := range res.Segments {
			segs = append(segs, map[string]any{"start": s.Start, "end": s.End, "tokens": s.Tokens})
		}
		task := c.opt.Task
		if task == "" {
			task = "transcribe"
		}
		cs := map[string]any{"name": c.name, "language": c.opt.Language, "task": task, "timestamps": c.opt.Timestamps,
			"decoder_input_ids": res.Prefix, "greedy_ids": res.Tokens, "generated": res.Tokens, "eos": false, "agree": true,
			"logits_rows": len(res.Tokens), "segments": segs}
		if c.opt.Prompt != "" {
			cs["prompt"] = c.opt.Prompt
		}
		cases = append(cases, cs)
	}
	writeF32(t, filepath.Join(dir, "logits.f32.gz"), all)
	golden := map[string]any{"tolerance": map[string]any{"max_abs_logit": 1e-4, "max_abs_tower": 1e-4},
		"features_shape": []int{mels, frames}, "encoder_shape": []int{whispertest.SourcePos, whispertest.Hidden},
		"vocab_size": whispertest.Vocab, "max_new_tokens": 8, "cases": cases}
	raw, _ := json.Marshal(golden)
	if err := os.WriteFile(filepath.Join(dir, "golden.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := whispertest.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	enc, lg := whispertest.Check(ctx, g, m, t.Errorf)
	if enc != 0 || lg > 1e-5 { // the checker steps one token at a time; these were whole sequences
		t.Errorf("own numbers: encoder %.3g, logits %.3g", enc, lg)
	}
	// A changed id must be caught.
	g.Cases[0].Greedy[len(g.Cases[0].Greedy)-1]++
	failures := 0
	whispertest.Check(ctx, g, m, func(string, ...any) { failures++ })
	if failures == 0 {
		t.Error("a changed greedy id was not caught")
	}
}
