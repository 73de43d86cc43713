// GGUF checkpoints: a .gguf file (or a folder holding one model's) read
// as the checkpoint it was converted from (engine/gguf,
// docs/design/gguf.md).

package checkpoint

import (
	"errors"
	"fmt"
	"strings"

	"hearth/engine/config"
	"hearth/engine/family"
	"hearth/engine/gguf"
	"hearth/engine/weights"
)

// readGGUFDir reads a folder without config.json: a checkpoint when it
// holds one GGUF model (gguf.Find), else ErrNoConfig, saying so when there
// are several to choose from.
func readGGUFDir(dir string) (*Checkpoint, error) {
	path, models := gguf.Find(dir)
	if path != "" {
		return readGGUF(dir, path)
	}
	if len(models) > 1 {
		return nil, fmt.Errorf("%w, and %d GGUF models (%s): name the file to load", ErrNoConfig, len(models), strings.Join(models, ", "))
	}
	return nil, ErrNoConfig
}

// readGGUF reads the GGUF model at path as the checkpoint dir (the path
// the caller named: the file, or its folder).
func readGGUF(dir, path string) (*Checkpoint, error) {
	g, gerr := gguf.Read(path)
	if errors.Is(gerr, gguf.ErrUnsupportedArch) {
		return nil, fmt.Errorf("%w: %w", family.ErrUnsupported, gerr)
	}
	if g == nil {
		return nil, gerr
	}
	cfg, err := config.Parse(g.ConfigJSON, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: the config its metadata gives: %w", path, err)
	}
	c := &Checkpoint{Dir: dir, ConfigJSON: g.ConfigJSON, Config: cfg, Quant: g.Quant, GGUF: g}
	if gerr == nil {
		c.Weights = g.Summary
	}
	return c, gerr
}

// OpenWeights opens the checkpoint's tensors for a Binder: the
// safetensors files of Dir, or the GGUF model's tensors under their
// transformers names.
func (c *Checkpoint) OpenWeights(opt weights.OpenOptions) (*weights.Set, error) {
	if c.GGUF != nil {
		return c.GGUF.Open(opt)
	}
	return weights.OpenWith(c.Dir, opt)
}
