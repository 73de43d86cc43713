// MLX quantization settings: config.json's quantization object, and the
// shape rules that tie a packed weight to its scales.

package weights

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"hearth/engine/tensor"
)

// Bits and group sizes MLX affine quantization supports.
var (
	validBits   = []int{2, 3, 4, 5, 6, 8}
	validGroups = []int{32, 64, 128}
)

// subBlockGroup is the group size of the weights engine/gguf repacks from
// GGUF's Q2_K, Q3_K and Q6_K, whose sub-blocks of 16 values each have
// their own scale. The kernels take it; MLX never writes it, so a
// config.json may not name it and Write does not store it.
const subBlockGroup = 16

// QuantConfig is config.json's MLX "quantization" (or "quantization_config")
// object:
//
//	{"group_size": 64, "bits": 4,
//	 "model.embed_tokens": {"group_size": 32, "bits": 8},
//	 "model.layers.0.mlp.gate": false}
type QuantConfig struct {
	Default *tensor.Quant            // nil when the object gives no top-level bits/group_size
	PerPath map[string]*tensor.Quant // module path → its settings; a nil value means explicitly not quantized
}

// Label names the quantization the way hearth ls, /api/ps and /api/show
// show it: "q4g64" for one setting throughout, "mixed" when only some
// modules are quantized, "" when nothing is.
func (q QuantConfig) Label() string {
	switch {
	case q.Default != nil:
		return fmt.Sprintf("q%dg%d", q.Default.Bits, q.Default.GroupSize)
	case len(q.PerPath) > 0:
		return "mixed"
	}
	return ""
}

// ParseQuantConfig parses the quantization object. An empty or null raw gives
// the zero QuantConfig (no quantization). Bits must be one of 2, 3, 4, 5, 6, 8
// and group_size one of 32, 64, 128; errors name the offending key.
func ParseQuantConfig(raw json.RawMessage) (QuantConfig, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return QuantConfig{}, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return QuantConfig{}, fmt.Errorf("quantization is not a JSON object: %w", err)
	}
	var q QuantConfig
	if m, ok := obj["quant_method"]; ok {
		return QuantConfig{}, fmt.Errorf("quantization: quant_method %s is not MLX affine quantization (Hearth reads MLX-quantized checkpoints)", m)
	}
	top, err := parseQuantFields("", obj, nil)
	if err != nil {
		return QuantConfig{}, err
	}
	q.Default = top
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic: the first bad key in order is reported
	for _, k := range keys {
		if k == "group_size" || k == "bits" || k == "mode" {
			continue
		}
		v := bytes.TrimSpace(obj[k])
		var entry *tensor.Quant
		switch {
		case string(v) == "false":
			entry = nil
		case string(v) == "true":
			if q.Default == nil {
				return QuantConfig{}, fmt.Errorf("quantization: %q is true but there are no top-level bits and group_size", k)
			}
			d := *q.Default
			entry = &d
		case len(v) > 0 && v[0] == '{':
			var sub map[string]json.RawMessage
			if err := json.Unmarshal(v, &sub); err != nil {
				return QuantConfig{}, fmt.Errorf("quantization: %q: %w", k, err)
			}
			if entry, err = parseQuantFields(k, sub, q.Default); err != nil {
				return QuantConfig{}, err
			}
			if entry == nil {
				return QuantConfig{}, fmt.Errorf("quantization: %q has neither bits nor group_size", k)
			}
		default:
			return QuantConfig{}, fmt.Errorf("quantization: %q is %s; want an object with bits and group_size, or false", k, v)
		}
		if q.PerPath == nil {
			q.PerPath = map[string]*tensor.Quant{}
		}
		q.PerPath[k] = entry
	}
	return q, nil
}

// parseQuantFields reads bits, group_size and mode from one object. With
// neither bits nor group_size it returns nil. A missing one is taken from
// inherit, or is an error when inherit is nil. key names the object in errors
// ("" for the top level).
func parseQuantFields(key string, obj map[string]json.RawMessage, inherit *tensor.Quant) (*tensor.Quant, error) {
	where := "quantization"
	if key != "" {
		where = fmt.Sprintf("quantization: %q", key)
	}
	if m, ok := obj["mode"]; ok {
		var mode string
		if err := json.Unmarshal(m, &mode); err != nil || mode != "affine" {
			return nil, fmt.Errorf("%s: mode %s is not supported (supported: \"affine\")", where, bytes.TrimSpace(m))
		}
	}
	rawBits, hasBits := obj["bits"]
	rawGroup, hasGroup := obj["group_size"]
	if !hasBits && !hasGroup {
		return nil, nil
	}
	var q tensor.Quant
	if inherit != nil {
		q = *inherit
	}
	if hasBits {
		if err := json.Unmarshal(rawBits, &q.Bits); err != nil {
			return nil, fmt.Errorf("%s: bits %s is not an integer", where, bytes.TrimSpace(rawBits))
		}
	} else if inherit == nil {
		return nil, fmt.Errorf("%s: group_size given without bits", where)
	}
	if hasGroup {
		if err := json.Unmarshal(rawGroup, &q.GroupSize); err != nil {
			return nil, fmt.Errorf("%s: group_size %s is not an integer", where, bytes.TrimSpace(rawGroup))
		}
	} else if inherit == nil {
		return nil, fmt.Errorf("%s: bits given without group_size", where)
	}
	if err := checkMLXQuant(q); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return &q, nil
}

// checkMLXQuant validates bits and group size against what MLX supports:
// the rule for config.json and for checkpoints Hearth writes.
func checkMLXQuant(q tensor.Quant) error {
	if !slices.Contains(validBits, q.Bits) {
		return fmt.Errorf("bits %d is not supported (supported: 2, 3, 4, 5, 6, 8)", q.Bits)
	}
	if !slices.Contains(validGroups, q.GroupSize) {
		return fmt.Errorf("group_size %d is not supported (supported: 32, 64, 128)", q.GroupSize)
	}
	return nil
}

// checkQuant validates bits and group size against what the kernels take:
// MLX's settings, and groups of 16 (subBlockGroup) for weights a GGUF
// checkpoint places with a per-path entry.
func checkQuant(q tensor.Quant) error {
	if q.GroupSize == subBlockGroup && slices.Contains(validBits, q.Bits) {
		return nil
	}
	if err := checkMLXQuant(q); err != nil && slices.Contains(validBits, q.Bits) {
		return fmt.Errorf("group_size %d is not supported (supported: 16, 32, 64, 128)", q.GroupSize)
	} else if err != nil {
		return err
	}
	return nil
}

// For returns the quantization of the module at path (for example
// "model.layers.0.self_attn.q_proj"), or nil when it is not quantized.
func (q QuantConfig) For(path string) *tensor.Quant {
	v, _ := q.lookup(path)
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// lookup is For that also says whether the config spoke about path at all
// (a per-path entry or a default), so that "explicitly not quantized" and
// "config silent" can be told apart.
func (q QuantConfig) lookup(path string) (quant *tensor.Quant, spoke bool) {
	if v, ok := q.PerPath[path]; ok {
		return v, true
	}
	return q.Default, q.Default != nil
}

// maxQuantDim bounds the last dimension of packed weights and scales (2^40,
// far beyond any real matrix) so that shape arithmetic cannot overflow.
const maxQuantDim int64 = 1 << 40

// quantFor decides the quantization of the weight at prefix whose packed
// weight and scales have the given shapes: config.json's entry when there is
// one, else the single (bits, group_size) the shapes allow.
func (q QuantConfig) quantFor(prefix string, wShape, sShape []int) (tensor.Quant, error) {
	v, spoke := q.lookup(prefix)
	if spoke && v == nil {
		return tensor.Quant{}, fmt.Errorf("%q: config.json quantization marks it as not quantized, but the checkpoint has %q", prefix, prefix+".scales")
	}
	if v != nil {
		return *v, nil
	}
	if len(wShape) == 0 || len(sShape) == 0 {
		return tensor.Quant{}, fmt.Errorf("%q: weight shape %v and scales shape %v are not quantized matrices", prefix, wShape, sShape)
	}
	packed, groups := wShape[len(wShape)-1], sShape[len(sShape)-1]
	var fits []tensor.Quant
	for _, bits := range validBits {
		for _, g := range validGroups {
			if groups > 0 && int64(packed) <= maxQuantDim && int64(groups) <= maxQuantDim &&
				int64(packed)*32 == int64(bits)*int64(g)*int64(groups) {
				fits = append(fits, tensor.Quant{Bits: bits, GroupSize: g})
			}
		}
	}
	switch len(fits) {
	case 1:
		return fits[0], nil
	case 0:
		return tensor.Quant{}, fmt.Errorf("%q: weight shape %v and scales shape %v fit no MLX quantization", prefix, wShape, sShape)
	}
	return tensor.Quant{}, fmt.Errorf("%q: weight shape %v and scales shape %v fit %s; config.json must say which (quantization bits and group_size)", prefix, wShape, sShape, describeFits(fits))
}

// describeFits lists candidate quantizations for an ambiguity error.
func describeFits(fits []tensor.Quant) string {
	s := ""
	for i, f := range fits {
		switch {
		case i == 0:
		case i == len(fits)-1:
			s += " or "
		default:
			s += ", "
		}
		s += fmt.Sprintf("%d-bit group %d", f.Bits, f.GroupSize)
	}
	return s
}

// quantLogicalShape checks the packed weight and scales shapes of prefix
// against q and returns the logical (dequantized) shape.
func quantLogicalShape(prefix string, wShape, sShape []int, q tensor.Quant) ([]int, error) {
	bad := func() error {
		return fmt.Errorf("%q: weight shape %v and scales shape %v do not fit %d-bit quantization with group size %d", prefix, wShape, sShape, q.Bits, q.GroupSize)
	}
	if err := checkQuant(q); err != nil {
		return nil, fmt.Errorf("%q: %w", prefix, err)
	}
	n := len(wShape)
	if n < 2 || len(sShape) != n || !slices.Equal(wShape[:n-1], sShape[:n-1]) ||
		int64(wShape[n-1]) > maxQuantDim || int64(sShape[n-1]) > maxQuantDim {
		return nil, bad()
	}
	in := int64(sShape[n-1]) * int64(q.GroupSize)
	if int64(wShape[n-1])*32 != in*int64(q.Bits) || int64(int(in)) != in {
		return nil, bad()
	}
	logical := slices.Clone(wShape)
	logical[n-1] = int(in)
	if _, ok := elementsChecked(logical); !ok {
		return nil, fmt.Errorf("%q: logical shape %v is too large", prefix, logical)
	}
	return logical, nil
}

// elementsChecked is tensor.Elements with overflow detection.
func elementsChecked(shape []int) (int64, bool) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		var ok bool
		if n, ok = mulInt64(n, int64(d)); !ok {
			return 0, false
		}
	}
	return n, true
}
