package towertest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"hearth/engine/cache"
	"hearth/engine/checkpoint"
	"hearth/engine/config"
	"hearth/engine/families"
	"hearth/engine/family"
	"hearth/engine/tensor"
	"hearth/engine/tower"
	"hearth/engine/tower/gemma4audio"
	"hearth/engine/weights"
	"hearth/internal/testmodels"
	"hearth/media"
)

// Gemma4AudioEntry is the Gemma 4 audio golden's folder name (made by
// tools/oracle/make_gemma4_audio_goldens.py).
const Gemma4AudioEntry = "gemma4_audio-f32"

// AudioGolden is the audio entry's golden.json.
type AudioGolden struct {
	Transformers string `json:"transformers"`
	Tolerance    struct {
		MaxAbsLogit float64 `json:"max_abs_logit"`
		MaxAbsTower float64 `json:"max_abs_tower"`
	} `json:"tolerance"`
	SpecialTokens map[string]int32 `json:"special_tokens"`
	Clip          AudioClip        `json:"clip"`
	Cases         []AudioCase      `json:"cases"`
}

// AudioClip is the golden's clip: its WAV, the extractor's features (in
// media's golden file) and mask, the tower's last hidden state (every
// row, the padded ones too) and mask, and the embedded soft tokens of the
// rows the mask keeps.
type AudioClip struct {
	File          string    `json:"file"` // from the repository root
	FeaturesFile  string    `json:"input_features_file"`
	FeaturesShape []int     `json:"input_features_shape"`
	FeaturesMask  []int     `json:"input_features_mask"`
	HiddenShape   []int     `json:"tower_last_hidden_state_shape"`
	Hidden        []float32 `json:"tower_last_hidden_state"`
	TowerMask     []int     `json:"tower_mask"`
	SoftShape     []int     `json:"audio_features_shape"`
	Soft          []float32 `json:"audio_features"`
}

// AudioCase is one conversation with the clip.
type AudioCase struct {
	Name        string          `json:"name"`
	Messages    json.RawMessage `json:"messages"`
	PromptText  string          `json:"prompt_text"`
	PromptIDs   []int32         `json:"prompt_ids"`
	AudioTokens int             `json:"audio_tokens"`
	GreedyIDs   []int32         `json:"greedy_ids"`
	Logits      [][]float32     `json:"logits"`
}

// RepoPath is a path from the repository root.
func RepoPath(p string) string { return filepath.Join(testmodels.Root(), "..", "..", p) }

// LoadAudio reads the audio entry's golden.json.
func LoadAudio() (*AudioGolden, error) {
	raw, err := os.ReadFile(filepath.Join(Dir(Gemma4AudioEntry), "golden.json"))
	if err != nil {
		return nil, err
	}
	var g AudioGolden
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("%s/golden.json: %w", Gemma4AudioEntry, err)
	}
	return &g, nil
}

// Features are the clip's reference features as the tower takes them.
func (c AudioClip) Features() (media.Features, error) {
	raw, err := os.ReadFile(RepoPath(c.FeaturesFile))
	if err != nil {
		return media.Features{}, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return media.Features{}, err
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return media.Features{}, err
	}
	if len(c.FeaturesShape) != 2 || len(data) != 4*c.FeaturesShape[0]*c.FeaturesShape[1] {
		return media.Features{}, fmt.Errorf("%s: %d bytes for features %v", c.FeaturesFile, len(data), c.FeaturesShape)
	}
	f := media.Features{Frames: c.FeaturesShape[0], Bins: c.FeaturesShape[1], Data: make([]float32, len(data)/4)}
	for i := range f.Data {
		f.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	for _, m := range c.FeaturesMask {
		f.Valid += m
	}
	return f, nil
}

// AudioBound is the audio entry's decoder and audio tower bound on one
// backend the way the engine binds them (one loader, then the weight
// audit).
type AudioBound struct {
	Checkpoint *checkpoint.Checkpoint
	Model      family.Model
	Audio      tower.Audio
	b          tensor.Backend
	set        *weights.Set
}

// BindAudio reads the entry in dir and binds it on b.
func BindAudio(dir string, b tensor.Backend) (*AudioBound, error) {
	ck, m, a, set, err := bindTower(dir, b, "audio", func(c *config.Config) loader[tower.Audio] {
		if l := families.AudioTower(c); l != nil {
			return loader[tower.Audio](l)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &AudioBound{Checkpoint: ck, Model: m, Audio: a, b: b, set: set}, nil
}

// Close closes the weights (the backend stays the caller's).
func (bd *AudioBound) Close() error { return bd.set.Close() }

// Run runs the tower over f on the backend and reads back its last
// hidden state and soft tokens.
func (bd *AudioBound) Run(ctx context.Context, f media.Features) (hidden, soft []float32, err error) {
	t, ok := bd.Audio.(*gemma4audio.Tower)
	if !ok {
		return nil, nil, fmt.Errorf("no tower outputs for %T", bd.Audio)
	}
	gr := tensor.NewGraph(bd.b)
	h, s, err := t.Forward(gr, f)
	if err != nil {
		return nil, nil, err
	}
	if err := bd.b.Run(ctx, gr, h, s); err != nil {
		return nil, nil, err
	}
	hidden = make([]float32, tensor.Elements(gr.Shape(h)))
	soft = make([]float32, tensor.Elements(gr.Shape(s)))
	if err := bd.b.Read(h, hidden); err != nil {
		return nil, nil, err
	}
	return hidden, soft, bd.b.Read(s, soft)
}

// AudioRow is where the case's soft tokens start: the first audio token.
func (c AudioCase) AudioRow(audioToken int32) int {
	for i, id := range c.PromptIDs {
		if id == audioToken {
			return i
		}
	}
	return -1
}

// Decode runs case c through the decoder: the prompt in one pass with the
// clip's soft tokens spliced in at row, then one pass per golden greedy
// id. It returns the logits before each greedy id.
func (bd *AudioBound) Decode(ctx context.Context, c AudioCase, row int, soft []float32) ([][]float32, error) {
	n := len(c.PromptIDs)
	caches, err := bd.Model.NewCaches(bd.b, n+len(c.GreedyIDs)+4, n)
	if err != nil {
		return nil, err
	}
	defer cache.FreeAll(caches)
	hidden := bd.Checkpoint.Config.HiddenSize
	step := func(tokens []int32, pos int, media bool) ([]float32, error) {
		gr := tensor.NewGraph(bd.b)
		batch := &family.Batch{Tokens: tokens, Pos: pos, Caches: caches}
		if media {
			batch.Media = []family.Media{{Row: row, Embeds: gr.Input(soft, len(soft)/hidden, hidden)}}
		}
		logits, err := bd.Model.Forward(gr, batch)
		if err != nil {
			return nil, err
		}
		if err := bd.b.Run(ctx, gr, logits); err != nil {
			return nil, err
		}
		out := make([]float32, tensor.Elements(gr.Shape(logits)))
		return out, bd.b.Read(logits, out)
	}
	logits, err := step(c.PromptIDs, 0, true)
	if err != nil {
		return nil, err
	}
	out := [][]float32{logits}
	for s := 0; s+1 < len(c.GreedyIDs); s++ {
		if logits, err = step(c.GreedyIDs[s:s+1], n+s, false); err != nil {
			return nil, err
		}
		out = append(out, logits)
	}
	return out, nil
}

// Greedy runs prompt through the decoder with the clip's soft tokens at
// row, then steps more passes each fed the last one's argmax, and returns
// the ids picked.
func (bd *AudioBound) Greedy(ctx context.Context, prompt []int32, row int, soft []float32, steps int) ([]int32, error) {
	n := len(prompt)
	caches, err := bd.Model.NewCaches(bd.b, n+steps+4, n)
	if err != nil {
		return nil, err
	}
	defer cache.FreeAll(caches)
	hidden := bd.Checkpoint.Config.HiddenSize
	var out []int32
	tokens, pos := prompt, 0
	for s := range steps {
		gr := tensor.NewGraph(bd.b)
		batch := &family.Batch{Tokens: tokens, Pos: pos, Caches: caches}
		if s == 0 {
			batch.Media = []family.Media{{Row: row, Embeds: gr.Input(soft, len(soft)/hidden, hidden)}}
		}
		logits, err := bd.Model.Forward(gr, batch)
		if err != nil {
			return nil, err
		}
		if err := bd.b.Run(ctx, gr, logits); err != nil {
			return nil, err
		}
		v := make([]float32, tensor.Elements(gr.Shape(logits)))
		if err := bd.b.Read(logits, v); err != nil {
			return nil, err
		}
		best := 0
		for i, x := range v {
			if x > v[best] {
				best = i
			}
		}
		out = append(out, int32(best))
		pos += len(tokens)
		tokens = []int32{int32(best)}
	}
	return out, nil
}
