// Package whispertest writes small random-weight Whisper checkpoints in
// the Hugging Face layout, for tests that need a Whisper model to load and
// serve (the HTTP route, the registry's listing) rather than the
// reference's numbers, which come from testdata/models/whisper-f32.
package whispertest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"hearth/engine/tensor"
	"hearth/engine/weights"
)

// Dims of the checkpoint Write makes: 80 mel bins, 100 source positions
// (a 2 s chunk), 32 target positions.
const (
	Hidden    = 32
	Heads     = 2
	FFN       = 64
	Mels      = 80
	SourcePos = 100
	TargetPos = 32
	Langs     = 3
)

var langs = []string{"en", "de", "fr"}

// Specials are Whisper's special tokens in Whisper's order, after the 256
// byte tokens.
var Specials = []string{"<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|de|>", "<|fr|>",
	"<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>", "<|nospeech|>", "<|notimestamps|>"}

// Vocab is the vocabulary size: bytes, specials, timestamps 0.00..2.00.
const Vocab = 256 + 11 + SourcePos + 1

// ID is a special token's id.
func ID(tok string) int32 {
	for i, s := range Specials {
		if s == tok {
			return int32(256 + i)
		}
	}
	panic("whispertest: no token " + tok)
}

// TimestampBegin is <|0.00|>'s id.
const TimestampBegin = 256 + 11

// byteChars is GPT-2's byte → character table, in GPT-2's vocabulary order.
func byteChars() []string {
	var bs []int
	for b := '!'; b <= '~'; b++ {
		bs = append(bs, int(b))
	}
	for b := '¡'; b <= '¬'; b++ {
		bs = append(bs, int(b))
	}
	for b := '®'; b <= 'ÿ'; b++ {
		bs = append(bs, int(b))
	}
	in := map[int]bool{}
	for _, b := range bs {
		in[b] = true
	}
	chars := make([]string, 0, 256)
	for _, b := range bs {
		chars = append(chars, string(rune(b)))
	}
	n := 0
	for b := 0; b < 256; b++ {
		if !in[b] {
			chars = append(chars, string(rune(256+n)))
			n++
		}
	}
	return chars
}

// Write makes a checkpoint in dir with random weights from seed. With
// englishOnly, the generation config has no languages or tasks (as
// whisper-*.en's).
func Write(dir string, seed uint64, englishOnly bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	eot, sot := ID("<|endoftext|>"), ID("<|startoftranscript|>")
	cfg := map[string]any{
		"model_type": "whisper", "architectures": []string{"WhisperForConditionalGeneration"},
		"vocab_size": Vocab, "num_mel_bins": Mels, "d_model": Hidden,
		"encoder_layers": 2, "encoder_attention_heads": Heads, "encoder_ffn_dim": FFN,
		"decoder_layers": 2, "decoder_attention_heads": Heads, "decoder_ffn_dim": FFN,
		"max_source_positions": SourcePos, "max_target_positions": TargetPos,
		"activation_function": "gelu", "scale_embedding": false, "tie_word_embeddings": true,
		"pad_token_id": eot, "bos_token_id": eot, "eos_token_id": eot, "decoder_start_token_id": sot,
	}
	gen := map[string]any{
		"decoder_start_token_id": sot, "eos_token_id": eot, "bos_token_id": eot, "pad_token_id": eot,
		"max_length": TargetPos, "no_timestamps_token_id": ID("<|notimestamps|>"),
		"prev_sot_token_id":     ID("<|startofprev|>"),
		"suppress_tokens":       []int32{1, 2, 7, sot, ID("<|translate|>"), ID("<|transcribe|>"), ID("<|startoflm|>"), ID("<|startofprev|>"), ID("<|nospeech|>")},
		"begin_suppress_tokens": []int32{220, eot}, "max_initial_timestamp_index": 50,
	}
	if englishOnly {
		gen["is_multilingual"] = false
	} else {
		gen["is_multilingual"] = true
		lt := map[string]int32{}
		for _, l := range langs {
			lt["<|"+l+"|>"] = ID("<|" + l + "|>")
		}
		gen["lang_to_id"] = lt
		gen["task_to_id"] = map[string]int32{"transcribe": ID("<|transcribe|>"), "translate": ID("<|translate|>")}
	}
	pre := map[string]any{"feature_extractor_type": "WhisperFeatureExtractor", "feature_size": Mels,
		"sampling_rate": 16000, "hop_length": 160, "n_fft": 400, "chunk_length": 2, "n_samples": 2 * 16000,
		"nb_max_frames": 2 * SourcePos, "padding_value": 0.0, "return_attention_mask": false}
	for name, v := range map[string]any{"config.json": cfg, "generation_config.json": gen, "preprocessor_config.json": pre,
		"tokenizer.json": tokenizerJSON(), "tokenizer_config.json": map[string]any{"tokenizer_class": "WhisperTokenizer",
			"eos_token": "<|endoftext|>", "bos_token": "<|endoftext|>", "unk_token": "<|endoftext|>"}} {
		raw, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			return err
		}
	}
	return weights.Write(filepath.Join(dir, "model.safetensors"), Weights(seed), map[string]string{"format": "pt"})
}

func tokenizerJSON() map[string]any {
	vocab := map[string]int{}
	for i, c := range byteChars() {
		vocab[c] = i
	}
	var added []map[string]any
	for i, s := range Specials {
		vocab[s] = 256 + i
		added = append(added, map[string]any{"id": 256 + i, "content": s, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true})
	}
	for i := 0; i <= SourcePos; i++ {
		s := fmt.Sprintf("<|%.2f|>", float64(i)*0.02)
		vocab[s] = TimestampBegin + i
		added = append(added, map[string]any{"id": TimestampBegin + i, "content": s, "single_word": false,
			"lstrip": false, "rstrip": false, "normalized": false, "special": false})
	}
	bl := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	return map[string]any{"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": nil, "pre_tokenizer": bl, "post_processor": nil, "decoder": bl,
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": []string{}}}
}

// Weights are the checkpoint's tensors (transformers' names, f32, proj_out
// tied and so not stored).
func Weights(seed uint64) []tensor.Weight {
	r := rand.New(rand.NewPCG(seed, 7))
	var ws []tensor.Weight
	add := func(name string, scale float64, offset float64, shape ...int) {
		n := tensor.Elements(shape)
		data := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(offset+scale*r.NormFloat64())))
		}
		ws = append(ws, tensor.Weight{Name: name, DType: tensor.F32, Shape: shape, Data: data})
	}
	d := Hidden
	lin := func(p string, out, in int, bias bool, gain float64) {
		add(p+".weight", gain/math.Sqrt(float64(in)), 0, out, in)
		if bias {
			add(p+".bias", 0.1, 0, out)
		}
	}
	ln := func(p string) { add(p+".weight", 0.1, 1, d); add(p+".bias", 0.1, 0, d) }
	attn := func(p string) {
		lin(p+".q_proj", d, d, true, 1)
		lin(p+".k_proj", d, d, false, 1)
		lin(p+".v_proj", d, d, true, 1)
		lin(p+".out_proj", d, d, true, 2)
	}
	e := "model.encoder."
	add(e+"conv1.weight", 1/math.Sqrt(float64(Mels*3)), 0, d, Mels, 3)
	add(e+"conv1.bias", 0.1, 0, d)
	add(e+"conv2.weight", 1/math.Sqrt(float64(d*3)), 0, d, d, 3)
	add(e+"conv2.bias", 0.1, 0, d)
	add(e+"embed_positions.weight", 0.3, 0, SourcePos, d)
	for i := 0; i < 2; i++ {
		p := fmt.Sprintf("%slayers.%d.", e, i)
		attn(p + "self_attn")
		ln(p + "self_attn_layer_norm")
		ln(p + "final_layer_norm")
		lin(p+"fc1", FFN, d, true, 1)
		lin(p+"fc2", d, FFN, true, 2)
	}
	ln(e + "layer_norm")
	dp := "model.decoder."
	add(dp+"embed_tokens.weight", 0.3, 0, Vocab, d)
	add(dp+"embed_positions.weight", 1, 0, TargetPos, d)
	for i := 0; i < 2; i++ {
		p := fmt.Sprintf("%slayers.%d.", dp, i)
		attn(p + "self_attn")
		attn(p + "encoder_attn")
		ln(p + "self_attn_layer_norm")
		ln(p + "encoder_attn_layer_norm")
		ln(p + "final_layer_norm")
		lin(p+"fc1", FFN, d, true, 1)
		lin(p+"fc2", d, FFN, true, 6)
	}
	ln(dp + "layer_norm")
	return ws
}
