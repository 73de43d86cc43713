// Package checkpoint reads what a model directory says about itself, once:
// config.json (with generation_config.json), the quantization it declares,
// the safetensors headers, and which towers the weights hold. The registry's
// listing, the loader, /api/show and the bench all start from a Checkpoint,
// so no other code opens config.json (docs/design/checkpoint.md).
package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"hearth/engine/config"
	"hearth/engine/family"
	"hearth/engine/gguf"
	"hearth/engine/tensor"
	"hearth/engine/weights"
	"hearth/internal/readfile"
)

// Checkpoint is one model directory as read from disk.
type Checkpoint struct {
	Dir        string
	ConfigJSON []byte         // config.json as read: a profile pins its fingerprint
	Config     *config.Config // normalized, with generation_config.json's defaults
	// Quant is the MLX quantization config.json declares; the zero value
	// when it declares none (or another scheme, which Err reports).
	Quant weights.QuantConfig
	// Weights is the header-only scan of the safetensors files; nil when
	// they cannot be read (Err says why).
	Weights *weights.Summary
	Towers  family.Caps // the vision and audio towers the weights hold
	// GGUF is the model when it is a GGUF file (gguf.go); nil for
	// safetensors.
	GGUF *gguf.Checkpoint
}

// ErrNoConfig is the error of a directory without config.json: not a
// model, or a download that never got that far.
var ErrNoConfig = errors.New("no config.json")

// maxConfigBytes bounds config.json and generation_config.json: real ones
// are a few kilobytes, and a hostile one must not be read into memory whole.
const maxConfigBytes = 16 << 20

// Read reads dir. A .gguf file, or a folder without config.json that holds
// one GGUF model, is read as the checkpoint it was converted from (gguf.go).
// Without a readable config.json it returns only the error.
// Past that it always returns the Checkpoint, with the first fault of the
// rest (a quantization Hearth cannot read, missing or truncated weights) as
// the error: a listing shows what is known about a broken download, a
// loader refuses it.
func Read(dir string) (*Checkpoint, error) {
	if path, _ := gguf.Find(dir); path == dir {
		return readGGUF(dir, dir)
	}
	raw, err := readBounded(filepath.Join(dir, "config.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return readGGUFDir(dir)
	}
	if err != nil {
		return nil, err
	}
	gen, err := readBounded(filepath.Join(dir, "generation_config.json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	cfg, err := config.Parse(raw, gen)
	if err != nil {
		return nil, fmt.Errorf("config.json: %w", err)
	}
	c := &Checkpoint{Dir: dir, ConfigJSON: raw, Config: cfg}
	q, quantErr := weights.ParseQuantConfig(cfg.Quantization)
	if quantErr != nil {
		quantErr = fmt.Errorf("config.json: %w", quantErr)
	} else {
		c.Quant = q
	}
	sum, scanErr := weights.Scan(dir, c.Quant)
	if missing := danglingLinks(dir); len(missing) > 0 {
		sum, scanErr = nil, fmt.Errorf("%s: the download did not finish (the file's blob is missing); run hearth pull again", strings.Join(missing, ", "))
	}
	if scanErr == nil {
		c.Weights = sum
		c.Towers = towers(sum)
	}
	return c, firstErr(quantErr, scanErr)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// readBounded reads a small file whole, refusing one over maxConfigBytes.
func readBounded(path string) ([]byte, error) { return readfile.Bounded(path, maxConfigBytes) }

// Quantization names how the weights are stored: "q4g64" for MLX affine
// quantization (the default bits and group size), "mixed" when only some
// modules say, the quant_method of another scheme ("gptq", "fp8"), or the
// dtype holding most bytes ("bf16"); from config.json's dtype when the
// headers are unreadable, and "" when nothing says.
func (c *Checkpoint) Quantization() string {
	if c.GGUF != nil {
		return c.GGUF.Label
	}
	if len(c.Config.Quantization) > 0 {
		if l := c.Quant.Label(); l != "" {
			return l
		}
		if _, err := weights.ParseQuantConfig(c.Config.Quantization); err != nil {
			var q struct {
				Method string `json:"quant_method"`
			}
			if json.Unmarshal(c.Config.Quantization, &q) == nil && q.Method != "" {
				return strings.ToLower(q.Method)
			}
			return "unknown"
		}
	}
	if c.Weights == nil {
		for _, k := range []string{"dtype", "torch_dtype"} {
			var d string
			if json.Unmarshal(c.Config.Text[k], &d) == nil {
				if l, ok := dtypeLabels[d]; ok {
					return l
				}
			}
		}
		return ""
	}
	bytes := map[tensor.DType]int64{}
	for _, t := range c.Weights.Tensors {
		bytes[t.DType] += t.Length
	}
	var best tensor.DType
	for d, n := range bytes {
		if n > bytes[best] || n == bytes[best] && d < best {
			best = d
		}
	}
	if best == 0 {
		return ""
	}
	return strings.ToLower(best.String())
}

// dtypeLabels maps config.json's dtype names onto quantization labels.
var dtypeLabels = map[string]string{"float32": "f32", "bfloat16": "bf16", "float16": "f16"}

// towerPrefixes are the tensor-name components that hold a vision or audio
// tower in the checkpoints Hugging Face and mlx-vlm ship.
var towerPrefixes = map[family.Caps][]string{
	family.Vision: {"vision_tower", "visual", "vision_model", "vision_encoder", "image_encoder", "vision_embed_tokens"},
	family.Audio:  {"audio_tower", "audio_model", "audio_encoder", "speech_encoder", "audio_embed_tokens"},
}

// towers reports which towers have tensors in the checkpoint.
func towers(sum *weights.Summary) family.Caps {
	var caps family.Caps
	for _, t := range sum.Tensors {
		caps |= TowerTensor(t.Name)
	}
	return caps
}

// TowerTensor says which tower a tensor belongs to (0: none): a name whose
// first or second component ("model.vision_tower.…") is a tower prefix.
func TowerTensor(name string) family.Caps {
	parts := strings.SplitN(name, ".", 3)
	for c, prefixes := range towerPrefixes {
		for _, p := range prefixes {
			if parts[0] == p || len(parts) > 1 && parts[1] == p {
				return c
			}
		}
	}
	return 0
}

// danglingLinks lists the files of dir (a snapshot), down to two folders
// deep, that are symlinks to a blob that is not there: what an interrupted
// huggingface_hub download leaves behind.
func danglingLinks(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && path != dir && strings.Count(strings.TrimPrefix(path, dir), string(filepath.Separator)) >= 3 {
			return filepath.SkipDir // repo files sit at most a folder or two down; a local path may be any tree
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}
