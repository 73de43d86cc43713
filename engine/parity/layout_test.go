package parity

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/tensor"
	"hearth/internal/testmodels"
)

// layout is how a real multimodal checkpoint ships a text decoder the
// oracle saved alone: the conditional-generation config with the text
// model under text_config, the decoder's tensors under prefix, the head
// under head, and tower tensors the text port must leave alone.
type layout struct {
	top, arch    string         // model_type and class of the conditional-generation config
	vision       map[string]any // its vision_config
	prefix, head string         // where model.* and lm_head.* move
	extra        []string       // tower tensors added beside the decoder
	// topQuant moves the quantization block to the top with its
	// per-module keys renamed, as mlx-lm writes it.
	topQuant bool
	// edit rewrites each weight before it is renamed (mlx-lm's sanitize).
	edit func(t *testing.T, w *tensor.Weight)
}

// copyAs copies the checkpoint in src to a temporary directory laid out as
// l says and returns that directory.
func (l layout) copyAs(t *testing.T, src string) string {
	t.Helper()
	dir := testmodels.Copy(t, src)
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var text map[string]any
	if err := json.Unmarshal(raw, &text); err != nil {
		t.Fatal(err)
	}
	top := map[string]any{
		"model_type": l.top, "architectures": []string{l.arch},
		"text_config": text, "vision_config": l.vision,
		"tie_word_embeddings": text["tie_word_embeddings"],
	}
	if q, ok := text["quantization"].(map[string]any); ok && l.topQuant {
		moved := map[string]any{}
		for k, v := range q {
			if name, ok := strings.CutPrefix(k, "model."); ok {
				k = l.prefix + name
			}
			moved[k] = v
		}
		delete(text, "quantization")
		delete(text, "quantization_config")
		top["quantization"] = moved
	}
	wrapped, err := json.Marshal(top)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), wrapped, 0o644); err != nil {
		t.Fatal(err)
	}
	testmodels.Rewrite(t, dir, func(ws []tensor.Weight) []tensor.Weight {
		for i := range ws {
			w := &ws[i]
			if l.edit != nil {
				l.edit(t, w)
			}
			if name, ok := strings.CutPrefix(w.Name, "model."); ok {
				w.Name = l.prefix + name
			} else if name, ok := strings.CutPrefix(w.Name, "lm_head."); ok {
				w.Name = l.head + "." + name
			}
		}
		for _, name := range l.extra {
			ws = append(ws, tensor.Weight{Name: name, DType: tensor.F32, Shape: []int{2, 2}, Data: make([]byte, 16)})
		}
		return ws
	})
	return dir
}
