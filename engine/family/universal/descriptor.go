// Package universal is the generic tier: one pre-norm decoder graph driven
// by a descriptor per model_type that says only how that type departs from
// the plain Llama decoder.
package universal

import (
	"sort"

	"hearth/engine/config"
	"hearth/engine/family"
)

// Descriptor lists how one model_type differs from the plain decoder. Its
// zero value is Llama.
type Descriptor struct {
	QKVBias bool // q/k/v projections carry .bias (Qwen2)
	QKNorm  bool // per-head RMSNorm on q and k before rope (Qwen3)
	// Ignore lists checkpoint tensors we knowingly skip; the audit allows them.
	Ignore []string
}

// descriptors is keyed by config model_type. Each entry is green in the
// parity manifest (testdata/models/manifest.json); a test keeps it so.
var descriptors = map[string]Descriptor{
	"llama": {Ignore: []string{"*.rotary_emb.inv_freq"}},
	"qwen2": {QKVBias: true, Ignore: []string{"*.rotary_emb.inv_freq"}},
	"qwen3": {QKNorm: true},
}

// aliases maps a model_type onto a descriptor it reuses unchanged, as
// mlx-lm's MODEL_REMAPPING does.
var aliases = map[string]string{
	"mistral": "llama",
}

// Lookup returns the descriptor for a model_type, following aliases.
func Lookup(modelType string) (Descriptor, string, bool) {
	if to, ok := aliases[modelType]; ok {
		modelType = to
	}
	d, ok := descriptors[modelType]
	return d, modelType, ok
}

// Types lists every model_type the generic tier accepts, aliases included.
func Types() []string {
	var out []string
	for t := range descriptors {
		out = append(out, t)
	}
	for t := range aliases {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Family is the generic tier's registry entry.
var Family = family.Family{
	Name: "universal",
	Tier: family.Generic,
	Accepts: func(c *config.Config) bool {
		_, _, ok := Lookup(c.TextModelType)
		return ok
	},
	Fidelity: "parity vs transformers 5.17 (f32 max-abs logit ≤ 1e-4, greedy ids exact)",
	Types:    Types,
	New:      New,
}
