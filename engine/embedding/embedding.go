// Package embedding reads how a sentence-transformers checkpoint turns a
// decoder's hidden states into one vector (modules.json: a Pooling module
// and an optional Normalize) and does it: last-token or mean pooling, L2
// normalization, and Matryoshka truncation.
package embedding

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Pooling is how the token vectors become one.
type Pooling string

const (
	LastToken Pooling = "lasttoken" // the last token's (Qwen3-Embedding)
	Mean      Pooling = "mean"      // the mean over the tokens
)

// Config is a checkpoint's embedding head.
type Config struct {
	Pooling   Pooling
	Normalize bool // a Normalize module follows the pooling: L2 to length 1
	// Matryoshka says the model card declares Matryoshka (MRL) training,
	// so a prefix of the vector is itself an embedding (`dimensions`).
	Matryoshka bool
}

// ErrNone is returned (wrapped) by Read for a directory without
// modules.json: not a sentence-transformers checkpoint.
var ErrNone = errors.New("no modules.json")

// module is one entry of modules.json.
type module struct {
	Path string `json:"path"`
	Type string `json:"type"`
}

// Read reads dir's modules.json and its Pooling module's config. A
// modules.json that is unreadable, lacks a Pooling module or asks for a
// pooling or a module Hearth does not do is an error that names it.
func Read(dir string) (*Config, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "modules.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNone, dir)
	}
	if err != nil {
		return nil, err
	}
	var mods []module
	if err := json.Unmarshal(raw, &mods); err != nil {
		return nil, fmt.Errorf("modules.json: %w", err)
	}
	c := &Config{}
	for i, m := range mods {
		kind := m.Type[strings.LastIndex(m.Type, ".")+1:]
		switch kind {
		case "Transformer":
			if i != 0 {
				return nil, fmt.Errorf("modules.json: the Transformer module is entry %d, not the first", i)
			}
		case "Pooling":
			if c.Pooling != "" {
				return nil, errors.New("modules.json: two Pooling modules")
			}
			if c.Pooling, err = readPooling(dir, m.Path); err != nil {
				return nil, err
			}
		case "Normalize":
			if c.Pooling == "" {
				return nil, errors.New("modules.json: Normalize before Pooling")
			}
			c.Normalize = true
		default:
			// A Dense projection and the like change the vector: refuse
			// rather than serve something else.
			return nil, fmt.Errorf("modules.json: module %q (%s) is not supported (Transformer, Pooling and Normalize are)", m.Path, m.Type)
		}
	}
	if c.Pooling == "" {
		return nil, errors.New("modules.json: no Pooling module")
	}
	c.Matryoshka = declaresMatryoshka(dir)
	return c, nil
}

// readPooling reads a Pooling module's config.json: exactly one mode, and
// one Hearth does.
func readPooling(dir, path string) (Pooling, error) {
	name := filepath.Join(filepath.Clean("/"+path), "config.json")[1:]
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", fmt.Errorf("the Pooling module's config: %w", err)
	}
	var modes map[string]any
	if err := json.Unmarshal(raw, &modes); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	var on []string
	for k, v := range modes {
		if b, ok := v.(bool); ok && b && strings.HasPrefix(k, "pooling_mode_") {
			on = append(on, k)
		}
	}
	if len(on) != 1 {
		return "", fmt.Errorf("%s: %d pooling modes are on (%s); Hearth takes exactly one", name, len(on), strings.Join(on, ", "))
	}
	switch on[0] {
	case "pooling_mode_lasttoken":
		return LastToken, nil
	case "pooling_mode_mean_tokens":
		return Mean, nil
	}
	return "", fmt.Errorf("%s: %s is not supported (pooling_mode_lasttoken and pooling_mode_mean_tokens are)", name, on[0])
}

// declaresMatryoshka reports a model card (README.md) that names
// Matryoshka representation learning: sentence-transformers' cards tag
// MatryoshkaLoss, Qwen3-Embedding's lists "MRL Support". No config file
// carries it.
func declaresMatryoshka(dir string) bool {
	raw, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		return false
	}
	s := string(raw)
	return strings.Contains(strings.ToLower(s), "matryoshka") || strings.Contains(s, "MRL")
}

// Pool turns hidden ([n, dim], row-major) into one vector by c's pooling,
// then normalizes it when c says to.
func (c *Config) Pool(hidden []float32, dim int) ([]float32, error) {
	n := len(hidden) / max(dim, 1)
	if dim <= 0 || n == 0 || n*dim != len(hidden) {
		return nil, fmt.Errorf("pool: %d values are not rows of %d", len(hidden), dim)
	}
	out := make([]float32, dim)
	switch c.Pooling {
	case LastToken:
		copy(out, hidden[(n-1)*dim:])
	case Mean:
		// summed in float64: the mean of a long input keeps its digits
		sum := make([]float64, dim)
		for r := range n {
			for j, v := range hidden[r*dim : (r+1)*dim] {
				sum[j] += float64(v)
			}
		}
		for j := range out {
			out[j] = float32(sum[j] / float64(n))
		}
	default:
		return nil, fmt.Errorf("pool: unknown pooling %q", c.Pooling)
	}
	if c.Normalize {
		Normalize(out)
	}
	return out, nil
}

// Normalize scales v to length 1 in place, as torch's F.normalize does
// (a zero vector stays zero: its norm is clamped to 1e-12).
func Normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	n := max(math.Sqrt(s), 1e-12)
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
}

// Truncate is v's first d dimensions, normalized again: a Matryoshka
// model's smaller embedding.
func Truncate(v []float32, d int) []float32 {
	if d <= 0 || d >= len(v) {
		return v
	}
	out := append([]float32(nil), v[:d]...)
	Normalize(out)
	return out
}
