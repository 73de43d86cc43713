// Package whisper runs Whisper (transformers' WhisperForConditionalGeneration,
// model_type "whisper"): a speech-recognition encoder–decoder. It does not
// fit the decoder-only family interface, so it has its own small graph code
// over the engine's tensor ops and runs on the same backends
// (docs/design/whisper.md).
//
// It reads Hugging Face checkpoints (config.json, generation_config.json,
// preprocessor_config.json, tokenizer.json, safetensors in f32/f16/bf16).
// mlx-community's Whisper conversions use the layout of mlx-examples'
// whisper (encoder.blocks.N.attn.query, conv weights [out, k, in], a
// config.json of n_mels/n_audio_state keys) and are not read: Load names
// the missing tensors.
package whisper

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"hearth/engine/fit"
	"hearth/engine/weights"
	"hearth/internal/readfile"
)

// Config is a WhisperConfig, with transformers' defaults for the keys a
// config.json leaves out.
type Config struct {
	Vocab          int    `json:"vocab_size"`
	Mels           int    `json:"num_mel_bins"`
	Hidden         int    `json:"d_model"`
	EncoderLayers  int    `json:"encoder_layers"`
	EncoderHeads   int    `json:"encoder_attention_heads"`
	EncoderFFN     int    `json:"encoder_ffn_dim"`
	DecoderLayers  int    `json:"decoder_layers"`
	DecoderHeads   int    `json:"decoder_attention_heads"`
	DecoderFFN     int    `json:"decoder_ffn_dim"`
	SourcePos      int    `json:"max_source_positions"`
	TargetPos      int    `json:"max_target_positions"`
	Act            string `json:"activation_function"`
	ScaleEmbedding bool   `json:"scale_embedding"`
	ModelType      string `json:"model_type"`
}

// Generation is what generation_config.json says about decoding (Whisper's
// own keys, which WhisperForConditionalGeneration.generate reads).
type Generation struct {
	DecoderStart  int32            `json:"decoder_start_token_id"`
	EOS           json.RawMessage  `json:"eos_token_id"`
	NoTimestamps  *int32           `json:"no_timestamps_token_id"`
	PrevSOT       *int32           `json:"prev_sot_token_id"`
	LangToID      map[string]int32 `json:"lang_to_id"`
	TaskToID      map[string]int32 `json:"task_to_id"`
	Multilingual  *bool            `json:"is_multilingual"`
	Suppress      []int32          `json:"suppress_tokens"`
	BeginSuppress []int32          `json:"begin_suppress_tokens"`
	MaxInitialTS  *int             `json:"max_initial_timestamp_index"`
	MaxLength     int              `json:"max_length"`
	eos           int32
}

// Features is preprocessor_config.json's WhisperFeatureExtractor settings.
type Features struct {
	Type     string `json:"feature_extractor_type"`
	Size     int    `json:"feature_size"`
	Rate     int    `json:"sampling_rate"`
	Hop      int    `json:"hop_length"`
	FFT      int    `json:"n_fft"`
	Samples  int    `json:"n_samples"`
	ChunkSec int    `json:"chunk_length"`
}

// Is reports whether a config.json's model_type is Whisper's.
func Is(modelType string) bool { return modelType == "whisper" }

const maxConfigBytes = 16 << 20

func readJSON(path string, into any) error {
	raw, err := readfile.Bounded(path, maxConfigBytes)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}

// ReadConfig reads and checks dir's config.json.
func ReadConfig(dir string) (Config, error) {
	c := Config{Vocab: 51865, Mels: 80, Hidden: 384, EncoderLayers: 4, EncoderHeads: 6, EncoderFFN: 1536,
		DecoderLayers: 4, DecoderHeads: 6, DecoderFFN: 1536, SourcePos: 1500, TargetPos: 448, Act: "gelu"}
	if err := readJSON(filepath.Join(dir, "config.json"), &c); err != nil {
		return c, err
	}
	if !Is(c.ModelType) {
		return c, fmt.Errorf("config.json: model_type %q is not whisper", c.ModelType)
	}
	for _, v := range []struct {
		key    string
		v, max int
	}{{"vocab_size", c.Vocab, 1 << 20}, {"num_mel_bins", c.Mels, 1024}, {"d_model", c.Hidden, 1 << 15},
		{"encoder_layers", c.EncoderLayers, 256}, {"encoder_attention_heads", c.EncoderHeads, 256},
		{"encoder_ffn_dim", c.EncoderFFN, 1 << 17}, {"decoder_layers", c.DecoderLayers, 256},
		{"decoder_attention_heads", c.DecoderHeads, 256}, {"decoder_ffn_dim", c.DecoderFFN, 1 << 17},
		{"max_source_positions", c.SourcePos, 1 << 16}, {"max_target_positions", c.TargetPos, 1 << 16}} {
		if v.v <= 0 || v.v > v.max {
			return c, fmt.Errorf("config.json: %q must be a positive integer up to %d, got %d", v.key, v.max, v.v)
		}
	}
	if c.Hidden%c.EncoderHeads != 0 || c.Hidden%c.DecoderHeads != 0 {
		return c, fmt.Errorf("config.json: d_model %d is not a multiple of the attention heads (%d, %d)", c.Hidden, c.EncoderHeads, c.DecoderHeads)
	}
	return c, nil
}

// ReadGeneration reads dir's generation_config.json, which a Whisper
// checkpoint needs: its prompt tokens and suppression lists live there.
func ReadGeneration(dir string, c Config) (Generation, error) {
	var g Generation
	if err := readJSON(filepath.Join(dir, "generation_config.json"), &g); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return g, errors.New("no generation_config.json (a Whisper checkpoint keeps its prompt tokens there)")
		}
		return g, err
	}
	var one int32
	var many []int32
	switch {
	case json.Unmarshal(g.EOS, &one) == nil:
		g.eos = one
	case json.Unmarshal(g.EOS, &many) == nil && len(many) > 0:
		g.eos = many[0]
	default:
		return g, errors.New("generation_config.json: no eos_token_id")
	}
	check := func(name string, id int32) error {
		if id < 0 || int(id) >= c.Vocab {
			return fmt.Errorf("generation_config.json: %s %d is outside the vocabulary of %d", name, id, c.Vocab)
		}
		return nil
	}
	if err := check("decoder_start_token_id", g.DecoderStart); err != nil {
		return g, err
	}
	if err := check("eos_token_id", g.eos); err != nil {
		return g, err
	}
	if g.NoTimestamps != nil {
		if err := check("no_timestamps_token_id", *g.NoTimestamps); err != nil {
			return g, err
		}
	}
	for k, id := range g.LangToID {
		if err := check("lang_to_id["+k+"]", id); err != nil {
			return g, err
		}
	}
	for k, id := range g.TaskToID {
		if err := check("task_to_id["+k+"]", id); err != nil {
			return g, err
		}
	}
	for _, id := range append(append([]int32(nil), g.Suppress...), g.BeginSuppress...) {
		if err := check("a suppressed token", id); err != nil {
			return g, err
		}
	}
	return g, nil
}

// ReadFeatures reads dir's preprocessor_config.json, or the
// "feature_extractor" of processor_config.json where transformers 5
// saved the processor whole; absent both, it is the extractor every
// Whisper checkpoint ships (30 s chunks).
func ReadFeatures(dir string, c Config) (Features, error) {
	f := Features{Size: c.Mels, Rate: 16000, Hop: 160, FFT: 400, ChunkSec: 30}
	err := readJSON(filepath.Join(dir, "preprocessor_config.json"), &f)
	if errors.Is(err, fs.ErrNotExist) {
		whole := struct {
			FeatureExtractor *Features `json:"feature_extractor"`
		}{&f}
		err = readJSON(filepath.Join(dir, "processor_config.json"), &whole)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return f, err
	}
	if f.Type != "" && !strings.Contains(f.Type, "Whisper") {
		return f, fmt.Errorf("preprocessor_config.json: feature_extractor_type %q is not Whisper's", f.Type)
	}
	if f.Samples == 0 {
		f.Samples = f.ChunkSec * f.Rate
	}
	if f.Rate != 16000 || f.Hop != 160 || f.FFT != 400 {
		return f, fmt.Errorf("preprocessor_config.json: sampling_rate %d, hop_length %d, n_fft %d (Hearth computes Whisper's 16000, 160, 400)", f.Rate, f.Hop, f.FFT)
	}
	if f.Size != c.Mels {
		return f, fmt.Errorf("preprocessor_config.json: feature_size %d, but the model takes %d mel bins", f.Size, c.Mels)
	}
	// The encoder takes exactly 2·max_source_positions frames (two convs,
	// the second of stride 2); the extractor makes n_samples/hop of them.
	if f.Samples/f.Hop != 2*c.SourcePos {
		return f, fmt.Errorf("preprocessor_config.json: n_samples %d gives %d frames, but the encoder takes %d", f.Samples, f.Samples/f.Hop, 2*c.SourcePos)
	}
	return f, nil
}

// Detect reports whether dir holds a Whisper checkpoint, by config.json's
// model_type alone (for listings that have not read the weights).
func Detect(dir string) bool {
	raw, err := readfile.Bounded(filepath.Join(dir, "config.json"), maxConfigBytes)
	if err != nil {
		return false
	}
	var c struct {
		ModelType string `json:"model_type"`
	}
	return json.Unmarshal(raw, &c) == nil && Is(c.ModelType)
}

// Transcribes reports whether tensor names hold a whole Whisper model
// (encoder front-end and decoder embedding): the capability comes from
// the tensors present, not from the config alone.
func Transcribes(names []string) bool {
	var enc, dec bool
	for _, n := range names {
		switch n {
		case "model.encoder.conv1.weight":
			enc = true
		case "model.decoder.embed_tokens.weight":
			dec = true
		}
	}
	return enc && dec
}

// FitShape describes the checkpoint in dir for the memory estimate
// (engine/fit): its weights, the decoder's self-attention cache over
// max_target_positions (the layers), and the cross-attention keys and
// values of one clip (max_source_positions rows a decoder layer), which
// are as constant as the weights.
func FitShape(dir string) (fit.Shape, error) {
	c, err := ReadConfig(dir)
	if err != nil {
		return fit.Shape{}, err
	}
	sum, err := weights.Scan(dir, weights.QuantConfig{})
	if err != nil {
		return fit.Shape{}, err
	}
	head := c.Hidden / c.DecoderHeads
	cross := int64(c.DecoderLayers) * 2 * int64(c.SourcePos) * int64(c.Hidden) * 4
	s := fit.Shape{WeightBytes: sum.Bytes + cross, Hidden: c.Hidden, QDim: c.Hidden, Intermediate: c.DecoderFFN,
		Vocab: c.Vocab, MaxContextTokens: c.TargetPos}
	for range c.DecoderLayers {
		s.Layers = append(s.Layers, fit.Layer{Kind: fit.Full, KVHeads: c.DecoderHeads, HeadDim: head})
	}
	return s, nil
}
