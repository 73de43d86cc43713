package whisper_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"hearth/engine/backend/cpu"
	"hearth/engine/tensor"
	"hearth/engine/weights"
	"hearth/engine/whisper"
	"hearth/engine/whisper/whispertest"
	"hearth/media"
)

func load(t *testing.T, dir string) *whisper.Model {
	t.Helper()
	b := cpu.New(cpu.Options{})
	t.Cleanup(func() { b.Close() })
	m, err := whisper.Load(dir, b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func tiny(t *testing.T, englishOnly bool) *whisper.Model {
	t.Helper()
	dir := t.TempDir()
	if err := whispertest.Write(dir, 3, englishOnly); err != nil {
		t.Fatal(err)
	}
	return load(t, dir)
}

func noise(frames, bins int, seed uint64) media.Features {
	r := rand.New(rand.NewPCG(seed, 1))
	f := media.Features{Bins: bins, Frames: frames, Valid: frames, Data: make([]float32, frames*bins)}
	for i := range f.Data {
		f.Data[i] = float32(r.NormFloat64() * 0.5)
	}
	return f
}

// TestGolden holds the encoder, the per-step logits and the greedy ids
// (with and without timestamps, a detected language, a prompt) to the
// reference's on the cpu backend.
func TestGolden(t *testing.T) {
	g, err := whispertest.Load()
	if errors.Is(err, whispertest.ErrNoGolden) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	m := load(t, whispertest.Dir())
	enc, lg := whispertest.Check(context.Background(), g, m, t.Errorf)
	t.Logf("cpu: encoder max |diff| %.3g, logits max |diff| %.3g", enc, lg)
}

// TestCacheMatchesRecompute checks the decoder's self-attention cache: the
// logits of a step fed one token after the cached prefix are those of the
// whole sequence fed at once.
func TestCacheMatchesRecompute(t *testing.T) {
	m := tiny(t, false)
	ctx := context.Background()
	if err := m.Encode(ctx, noise(2*whispertest.SourcePos, whispertest.Mels, 1), nil); err != nil {
		t.Fatal(err)
	}
	seq := []int32{whispertest.ID("<|startoftranscript|>"), whispertest.ID("<|en|>"), 72, 101, 108, 108, 111}
	inc := make([]float32, whispertest.Vocab)
	full := make([]float32, whispertest.Vocab)
	if err := m.Step(ctx, seq[:2], 0, inc); err != nil {
		t.Fatal(err)
	}
	for n := 3; n <= len(seq); n++ {
		if err := m.Step(ctx, seq[n-1:n], n-1, inc); err != nil {
			t.Fatal(err)
		}
		snapshot := append([]float32(nil), inc...)
		if err := m.Step(ctx, seq[:n], 0, full); err != nil {
			t.Fatal(err)
		}
		if d := whispertest.MaxDiff(snapshot, full); d > 1e-5 {
			t.Fatalf("%d tokens: cached step and recompute differ by %.3g", n, d)
		}
	}
}

// TestEncoderSeesFeatures checks that the conv front-end and the cross
// attention carry the audio: other features move the first step's logits.
func TestEncoderSeesFeatures(t *testing.T) {
	m := tiny(t, false)
	ctx := context.Background()
	prefix := []int32{whispertest.ID("<|startoftranscript|>")}
	a, b := make([]float32, whispertest.Vocab), make([]float32, whispertest.Vocab)
	for i, f := range []media.Features{noise(2*whispertest.SourcePos, whispertest.Mels, 1), noise(2*whispertest.SourcePos, whispertest.Mels, 2)} {
		if err := m.Encode(ctx, f, nil); err != nil {
			t.Fatal(err)
		}
		dst := a
		if i == 1 {
			dst = b
		}
		if err := m.Step(ctx, prefix, 0, dst); err != nil {
			t.Fatal(err)
		}
	}
	if d := whispertest.MaxDiff(a, b); d < 1e-3 {
		t.Fatalf("other audio moves the logits by %.3g", d)
	}
	if err := m.Encode(ctx, noise(10, whispertest.Mels, 1), nil); err == nil {
		t.Fatal("features of 10 frames were encoded")
	}
}

func TestPrefix(t *testing.T) {
	m := tiny(t, false)
	ctx := context.Background()
	f := noise(2*whispertest.SourcePos, whispertest.Mels, 1)
	sot, en, de := whispertest.ID("<|startoftranscript|>"), whispertest.ID("<|en|>"), whispertest.ID("<|de|>")
	tr, tl, nots := whispertest.ID("<|transcribe|>"), whispertest.ID("<|translate|>"), whispertest.ID("<|notimestamps|>")
	for _, c := range []struct {
		opt  whisper.Options
		want []int32
	}{
		{whisper.Options{Language: "en"}, []int32{sot, en, tr, nots}},
		{whisper.Options{Language: "German", Task: "translate"}, []int32{sot, de, tl, nots}},
		{whisper.Options{Language: "en", Timestamps: true}, []int32{sot, en, tr}},
		{whisper.Options{Language: "de", Prompt: "  hi "}, []int32{whispertest.ID("<|startofprev|>"), 220, 'h' - 33, 'i' - 33, sot, de, tr, nots}},
	} {
		res, err := m.Decode(ctx, f, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		if !equal(res.Prefix, c.want) {
			t.Errorf("%+v: prefix %v, want %v", c.opt, res.Prefix, c.want)
		}
	}
	// A detected language is one of the checkpoint's.
	res, err := m.Decode(ctx, f, whisper.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l := res.Language; l != "en" && l != "de" && l != "fr" || res.Prefix[1] != whispertest.ID("<|"+l+"|>") {
		t.Errorf("detected %q, prefix %v", l, res.Prefix)
	}
	for _, opt := range []whisper.Options{{Language: "xx"}, {Language: "en", Task: "summarize"}, {Language: "en", Prompt: "<|endoftext|>"}} {
		var ie *whisper.InputError
		if _, err := m.Decode(ctx, f, opt); !errors.As(err, &ie) {
			t.Errorf("%+v: err %v, want an InputError", opt, err)
		}
	}
	en1 := tiny(t, true)
	var ie *whisper.InputError
	if _, err := en1.Decode(ctx, f, whisper.Options{Language: "de"}); !errors.As(err, &ie) {
		t.Errorf("English-only model, German: err %v", err)
	}
	res, err = en1.Decode(ctx, f, whisper.Options{Language: "en"})
	if err != nil || !equal(res.Prefix, []int32{sot, nots}) {
		t.Errorf("English-only model: prefix %v, err %v", res.Prefix, err)
	}
}

// TestTimestampRules drives the timestamp processor by hand.
func TestTimestampRules(t *testing.T) {
	m := tiny(t, false)
	tb := int(m.TimestampBegin())
	eot := int(whispertest.ID("<|endoftext|>"))
	begin := 3
	prefix := []int32{whispertest.ID("<|startoftranscript|>"), whispertest.ID("<|en|>"), whispertest.ID("<|transcribe|>")}
	flat := func() []float32 { return make([]float32, whispertest.Vocab) }
	inf := func(x float32) bool { return math.IsInf(float64(x), -1) }

	// First step: only timestamps up to max_initial_timestamp_index.
	l := flat()
	m.Process(l, prefix, begin, true)
	if !inf(l[65]) || !inf(l[eot]) || inf(l[tb]) || inf(l[tb+50]) || !inf(l[tb+51]) {
		t.Errorf("first step: text %v eot %v <|0.00|> %v <|1.00|> %v <|1.02|> %v", l[65], l[eot], l[tb], l[tb+50], l[tb+51])
	}
	// After text then a timestamp (a segment open): text is masked, the
	// segment may end at that timestamp or later, not earlier.
	l = flat()
	m.Process(l, append(append([]int32{}, prefix...), int32(tb+5), 65, int32(tb+7)), begin, true)
	if !inf(l[65]) || !inf(l[tb+6]) || inf(l[tb+7]) || inf(l[tb+8]) {
		t.Errorf("after text, timestamp: text %v t6 %v t7 %v t8 %v", l[65], l[tb+6], l[tb+7], l[tb+8])
	}
	// After a pair: no timestamp; text open.
	l = flat()
	m.Process(l, append(append([]int32{}, prefix...), int32(tb+5), 65, int32(tb+7), int32(tb+7)), begin, true)
	if inf(l[65]) || !inf(l[tb+9]) {
		t.Errorf("after a pair: text %v timestamp %v", l[65], l[tb+9])
	}
	// The timestamps' mass beats every text token: text is masked.
	l = flat()
	for i := tb; i < len(l); i++ {
		l[i] = 1
	}
	l[65] = 2
	m.Process(l, append(append([]int32{}, prefix...), int32(tb), 66, 67), begin, true)
	if !inf(l[65]) || inf(l[tb+3]) {
		t.Errorf("timestamp mass: text %v timestamp %v", l[65], l[tb+3])
	}
	// Suppression and begin suppression apply without timestamps too.
	l = flat()
	m.Process(l, prefix, begin, false)
	if !inf(l[220]) || !inf(l[eot]) || !inf(l[1]) || inf(l[65]) || inf(l[tb]) {
		t.Errorf("suppression: space %v eot %v 1 %v text %v timestamp %v", l[220], l[eot], l[1], l[65], l[tb])
	}
}

// TestSampling: temperature > 0 with a seed is repeatable, and decodes
// differently from greedy over a few seeds.
func TestSampling(t *testing.T) {
	m := tiny(t, false)
	ctx := context.Background()
	f := noise(2*whispertest.SourcePos, whispertest.Mels, 4)
	greedy, err := m.Decode(ctx, f, whisper.Options{Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	differs := false
	for s := uint64(1); s <= 4; s++ {
		seed := s
		a, err := m.Decode(ctx, f, whisper.Options{Language: "en", Temperature: 1.5, Seed: &seed})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := m.Decode(ctx, f, whisper.Options{Language: "en", Temperature: 1.5, Seed: &seed})
		if !equal(a.Tokens, b.Tokens) {
			t.Fatalf("seed %d: %v then %v", s, a.Tokens, b.Tokens)
		}
		differs = differs || !equal(a.Tokens, greedy.Tokens)
	}
	if !differs {
		t.Error("sampling at temperature 1.5 always gave the greedy ids")
	}
}

// TestCancel: a cancelled context stops the decoding.
func TestCancel(t *testing.T) {
	m := tiny(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Decode(ctx, noise(2*whispertest.SourcePos, whispertest.Mels, 4), whisper.Options{Language: "en"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEncoderNaive holds the encoder graph (the convolutions written as
// products over frame rows, the shifted tap of the strided one) to a
// plain float64 reading of transformers' WhisperEncoder over the same
// weights.
func TestEncoderNaive(t *testing.T) {
	dir := t.TempDir()
	if err := whispertest.Write(dir, 5, false); err != nil {
		t.Fatal(err)
	}
	m := load(t, dir)
	ws := map[string][]float64{}
	for _, w := range whispertest.Weights(5) {
		v := make([]float32, len(w.Data)/4)
		tensor.Float32(w.DType, w.Data, 0, v)
		f := make([]float64, len(v))
		for i, x := range v {
			f[i] = float64(x)
		}
		ws[w.Name] = f
	}
	const d, s, mels, ffn, heads = whispertest.Hidden, whispertest.SourcePos, whispertest.Mels, whispertest.FFN, whispertest.Heads
	feat := noise(2*s, mels, 9)
	gelu := func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }
	// conv1d over x [in][T] (channels first), weight [d][in][3], padding 1.
	conv := func(x [][]float64, w, b []float64, in, stride int) [][]float64 {
		n := len(x[0])
		outN := (n+2-3)/stride + 1
		out := make([][]float64, d)
		for o := 0; o < d; o++ {
			out[o] = make([]float64, outN)
			for t := 0; t < outN; t++ {
				acc := b[o]
				for c := 0; c < in; c++ {
					for k := 0; k < 3; k++ {
						if src := t*stride + k - 1; src >= 0 && src < n {
							acc += w[(o*in+c)*3+k] * x[c][src]
						}
					}
				}
				out[o][t] = gelu(acc)
			}
		}
		return out
	}
	x0 := make([][]float64, mels)
	for c := range x0 {
		x0[c] = make([]float64, 2*s)
		for t := 0; t < 2*s; t++ {
			x0[c][t] = float64(feat.Data[t*mels+c])
		}
	}
	e := "model.encoder."
	h1 := conv(x0, ws[e+"conv1.weight"], ws[e+"conv1.bias"], mels, 1)
	h2 := conv(h1, ws[e+"conv2.weight"], ws[e+"conv2.bias"], d, 2)
	x := make([][]float64, s)
	for t := range x {
		x[t] = make([]float64, d)
		for c := 0; c < d; c++ {
			x[t][c] = h2[c][t] + ws[e+"embed_positions.weight"][t*d+c]
		}
	}
	lnorm := func(v []float64, p string) []float64 {
		var mean, vr float64
		for _, a := range v {
			mean += a
		}
		mean /= float64(len(v))
		for _, a := range v {
			vr += (a - mean) * (a - mean)
		}
		vr /= float64(len(v))
		out := make([]float64, len(v))
		for i, a := range v {
			out[i] = (a-mean)/math.Sqrt(vr+1e-5)*ws[p+".weight"][i] + ws[p+".bias"][i]
		}
		return out
	}
	linear := func(v []float64, p string, out int) []float64 {
		w, b := ws[p+".weight"], ws[p+".bias"]
		r := make([]float64, out)
		for o := 0; o < out; o++ {
			if b != nil {
				r[o] = b[o]
			}
			for i, a := range v {
				r[o] += w[o*len(v)+i] * a
			}
		}
		return r
	}
	hd := d / heads
	for l := 0; l < 2; l++ {
		p := e + "layers." + string(rune('0'+l)) + "."
		q, k, v := make([][]float64, s), make([][]float64, s), make([][]float64, s)
		for t := range x {
			h := lnorm(x[t], p+"self_attn_layer_norm")
			q[t], k[t], v[t] = linear(h, p+"self_attn.q_proj", d), linear(h, p+"self_attn.k_proj", d), linear(h, p+"self_attn.v_proj", d)
		}
		next := make([][]float64, s)
		for t := range x {
			att := make([]float64, d)
			for hh := 0; hh < heads; hh++ {
				sc := make([]float64, s)
				top := math.Inf(-1)
				for u := range sc {
					for j := 0; j < hd; j++ {
						sc[u] += q[t][hh*hd+j] * k[u][hh*hd+j]
					}
					sc[u] /= math.Sqrt(float64(hd))
					top = math.Max(top, sc[u])
				}
				var z float64
				for u := range sc {
					sc[u] = math.Exp(sc[u] - top)
					z += sc[u]
				}
				for u := range sc {
					for j := 0; j < hd; j++ {
						att[hh*hd+j] += sc[u] / z * v[u][hh*hd+j]
					}
				}
			}
			o := linear(att, p+"self_attn.out_proj", d)
			r := make([]float64, d)
			for c := range r {
				r[c] = x[t][c] + o[c]
			}
			f := linear(lnorm(r, p+"final_layer_norm"), p+"fc1", ffn)
			for i := range f {
				f[i] = gelu(f[i])
			}
			f = linear(f, p+"fc2", d)
			for c := range r {
				r[c] += f[c]
			}
			next[t] = r
		}
		x = next
	}
	want := make([]float32, 0, s*d)
	for t := range x {
		for _, a := range lnorm(x[t], e+"layer_norm") {
			want = append(want, float32(a))
		}
	}
	got := make([]float32, s*d)
	if err := m.Encode(context.Background(), feat, got); err != nil {
		t.Fatal(err)
	}
	if diff := whispertest.MaxDiff(got, want); diff > 1e-4 {
		t.Fatalf("encoder vs the plain reading: max |diff| %.3g", diff)
	} else {
		t.Logf("encoder vs the plain reading: max |diff| %.3g", diff)
	}
}

// TestBF16 loads a bf16 checkpoint: its logits are those of the f32
// checkpoint holding the same (bf16-rounded) values.
func TestBF16(t *testing.T) {
	ws := whispertest.Weights(6)
	bf, rounded := make([]tensor.Weight, len(ws)), make([]tensor.Weight, len(ws))
	for i, w := range ws {
		v := make([]float32, len(w.Data)/4)
		tensor.Float32(w.DType, w.Data, 0, v)
		b16, f32 := make([]byte, 2*len(v)), make([]byte, 4*len(v))
		for j, x := range v {
			h := tensor.FloatToBF16(x)
			binary.LittleEndian.PutUint16(b16[2*j:], h)
			binary.LittleEndian.PutUint32(f32[4*j:], uint32(h)<<16)
		}
		bf[i] = tensor.Weight{Name: w.Name, DType: tensor.BF16, Shape: w.Shape, Data: b16}
		rounded[i] = tensor.Weight{Name: w.Name, DType: tensor.F32, Shape: w.Shape, Data: f32}
	}
	var logits [2][]float32
	for i, set := range [][]tensor.Weight{rounded, bf} {
		dir := t.TempDir()
		if err := whispertest.Write(dir, 6, false); err != nil {
			t.Fatal(err)
		}
		if err := weights.Write(filepath.Join(dir, "model.safetensors"), set, nil); err != nil {
			t.Fatal(err)
		}
		m := load(t, dir)
		ctx := context.Background()
		if err := m.Encode(ctx, noise(2*whispertest.SourcePos, whispertest.Mels, 6), nil); err != nil {
			t.Fatal(err)
		}
		logits[i] = make([]float32, whispertest.Vocab)
		if err := m.Step(ctx, []int32{whispertest.ID("<|startoftranscript|>"), whispertest.ID("<|en|>"), 70}, 0, logits[i]); err != nil {
			t.Fatal(err)
		}
	}
	if d := whispertest.MaxDiff(logits[0], logits[1]); d > 1e-5 {
		t.Fatalf("bf16 vs its f32 values: logits max |diff| %.3g", d)
	}
}
