package whispertest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"hearth/engine/tensor"
	"hearth/engine/whisper"
	"hearth/internal/testmodels"
	"hearth/media"
)

// Entry is the reference's golden checkpoint under testdata/models,
// written by tools/oracle/make_whisper_goldens.py.
const Entry = "whisper-f32"

// Dir is the golden checkpoint's directory.
func Dir() string { return filepath.Join(testmodels.Root(), Entry) }

// ErrNoGolden is Load's error when the golden has not been made.
var ErrNoGolden = errors.New("testdata/models/" + Entry + " is absent (run tools/oracle/make_whisper_goldens.py on the device)")

// Case is one decoding the reference ran.
type Case struct {
	Name       string  `json:"name"`
	Language   string  `json:"language"`
	Task       string  `json:"task"`
	Timestamps bool    `json:"timestamps"`
	Prompt     *string `json:"prompt"`
	PromptIDs  []int32 `json:"prompt_ids"`
	Detected   *int32  `json:"detected_language_id"`
	Init       []int32 `json:"init_tokens"`
	Prefix     []int32 `json:"decoder_input_ids"`
	Generated  []int32 `json:"generated"` // model.generate's
	Greedy     []int32 `json:"greedy_ids"`
	EOS        bool    `json:"eos"`
	Agree      bool    `json:"agree"`
	Rows       int     `json:"logits_rows"`
	Segments   []struct {
		Start  float64 `json:"start"`
		End    float64 `json:"end"`
		Tokens []int32 `json:"tokens"`
	} `json:"segments"`
	Text   string `json:"text"`
	Logits [][]float32
}

// Golden is the reference's numbers for the golden checkpoint.
type Golden struct {
	Tolerance struct {
		Logit float64 `json:"max_abs_logit"`
		Tower float64 `json:"max_abs_tower"`
	} `json:"tolerance"`
	FeaturesShape []int   `json:"features_shape"` // [mels, frames]
	EncoderShape  []int   `json:"encoder_shape"`
	Vocab         int     `json:"vocab_size"`
	MaxNew        int     `json:"max_new_tokens"`
	Cases         []*Case `json:"cases"`
	Clip          string  `json:"clip"`
	Features      media.Features
	Encoder       []float32
}

// Load reads the golden, or returns ErrNoGolden.
func Load() (*Golden, error) { return LoadDir(Dir()) }

// LoadDir reads a golden in the oracle script's format from dir.
func LoadDir(dir string) (*Golden, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoGolden
	}
	if err != nil {
		return nil, err
	}
	g := &Golden{}
	if err := json.Unmarshal(raw, g); err != nil {
		return nil, err
	}
	feats, err := readF32(filepath.Join(dir, "features.f32.gz"))
	if err != nil {
		return nil, err
	}
	mels, frames := g.FeaturesShape[0], g.FeaturesShape[1]
	if len(feats) != mels*frames {
		return nil, fmt.Errorf("features: %d values for %v", len(feats), g.FeaturesShape)
	}
	// The reference's input_features are [mels, frames]; media's are
	// frame-major.
	f := media.Features{Bins: mels, Frames: frames, Valid: frames, Data: make([]float32, len(feats))}
	for m := 0; m < mels; m++ {
		for t := 0; t < frames; t++ {
			f.Data[t*mels+m] = feats[m*frames+t]
		}
	}
	g.Features = f
	if g.Encoder, err = readF32(filepath.Join(dir, "encoder.f32.gz")); err != nil {
		return nil, err
	}
	logits, err := readF32(filepath.Join(dir, "logits.f32.gz"))
	if err != nil {
		return nil, err
	}
	for _, c := range g.Cases {
		for r := 0; r < c.Rows; r++ {
			if len(logits) < g.Vocab {
				return nil, errors.New("logits.f32.gz is shorter than the cases' rows")
			}
			c.Logits = append(c.Logits, logits[:g.Vocab])
			logits = logits[g.Vocab:]
		}
	}
	return g, nil
}

func readF32(path string) ([]float32, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// MaxDiff is the largest |a[i] - b[i]| (+Inf when the lengths differ).
func MaxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// Check runs every check of the golden on m (loaded from Dir on some
// backend) and reports each failure through fail; it returns the largest
// encoder and logit differences seen.
func Check(ctx context.Context, g *Golden, m *whisper.Model, fail func(format string, args ...any)) (encDiff, logitDiff float64) {
	hidden := make([]float32, tensor.Elements(g.EncoderShape))
	if err := m.Encode(ctx, g.Features, hidden); err != nil {
		fail("encode: %v", err)
		return
	}
	encDiff = MaxDiff(hidden, g.Encoder)
	if encDiff > g.Tolerance.Tower {
		fail("encoder output: max |diff| %.3g over %.3g", encDiff, g.Tolerance.Tower)
	}
	logits := make([]float32, m.Config.Vocab)
	for _, c := range g.Cases {
		// Teacher-forced: the prefix, then each golden id in turn.
		seq := append([]int32(nil), c.Prefix...)
		for step, want := range c.Logits {
			feed, pos := seq, 0
			if step > 0 {
				feed, pos = seq[len(seq)-1:], len(seq)-1
			}
			if err := m.Step(ctx, feed, pos, logits); err != nil {
				fail("%s step %d: %v", c.Name, step, err)
				return
			}
			d := MaxDiff(logits, want)
			logitDiff = max(logitDiff, d)
			if d > g.Tolerance.Logit {
				fail("%s step %d: logits max |diff| %.3g over %.3g", c.Name, step, d, g.Tolerance.Logit)
			}
			if step < len(c.Greedy) {
				seq = append(seq, c.Greedy[step])
			}
		}
		opt := whisper.Options{Language: c.Language, Task: c.Task, Timestamps: c.Timestamps, MaxTokens: g.MaxNew}
		if c.Detected != nil {
			opt.Language = ""
		}
		if c.Prompt != nil {
			opt.Prompt = *c.Prompt
		}
		res, err := m.Decode(ctx, g.Features, opt)
		if err != nil {
			fail("%s: decode: %v", c.Name, err)
			continue
		}
		if fmt.Sprint(res.Prefix) != fmt.Sprint(c.Prefix) {
			fail("%s: decoder prompt %v, the reference's %v", c.Name, res.Prefix, c.Prefix)
		}
		want := c.Greedy
		if c.EOS {
			want = want[:len(want)-1]
		}
		if fmt.Sprint(res.Tokens) != fmt.Sprint(want) {
			fail("%s: ids %v, the reference's %v", c.Name, res.Tokens, want)
		}
		if c.Agree && c.Name == "en_timestamps" {
			if len(res.Segments) != len(c.Segments) {
				fail("%s: %d segments, the reference's %d", c.Name, len(res.Segments), len(c.Segments))
				continue
			}
			for i, s := range c.Segments {
				r := res.Segments[i]
				if math.Abs(r.Start-s.Start) > 1e-6 || math.Abs(r.End-s.End) > 1e-6 || fmt.Sprint(r.Tokens) != fmt.Sprint(s.Tokens) {
					fail("%s segment %d: %.2f-%.2f %v, the reference's %.2f-%.2f %v", c.Name, i, r.Start, r.End, r.Tokens, s.Start, s.End, s.Tokens)
				}
			}
		}
	}
	return encDiff, logitDiff
}
