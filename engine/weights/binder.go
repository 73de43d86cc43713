// Binder: hands tensors to model code by checkpoint name, records every miss
// and structural problem, and closes the load with the weight audit.

package weights

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"hearth/engine/tensor"
)

// Binder hands out tensors of a Set by checkpoint name and records every
// miss; Audit closes the load. The weights it returns alias the Set's
// read-only mappings. It is safe for concurrent use.
type Binder struct {
	s *Set
	q QuantConfig

	mu      sync.Mutex
	used    map[string]bool
	missing map[string]bool
	err     error // first structural error
}

// NewBinder returns a Binder over s that reads quantization settings from q.
func NewBinder(s *Set, q QuantConfig) *Binder {
	return &Binder{s: s, q: q, used: map[string]bool{}, missing: map[string]bool{}}
}

// Alloc is the Set's Alloc: memory for a weight assembled at load.
func (b *Binder) Alloc(n int) ([]byte, error) { return b.s.Alloc(n) }

// Tensor returns the dense tensor with the full checkpoint name. On a miss it
// records the name as missing and returns a zero Weight.
func (b *Binder) Tensor(name string) tensor.Weight {
	w, ok := b.Optional(name)
	if !ok {
		b.mu.Lock()
		b.missing[name] = true
		b.mu.Unlock()
	}
	return w
}

// Optional returns the dense tensor with the full checkpoint name; its
// absence is fine and is not recorded as missing.
func (b *Binder) Optional(name string) (tensor.Weight, bool) {
	data, ok := b.s.Bytes(name)
	if !ok {
		return tensor.Weight{}, false
	}
	in, _ := b.s.Info(name)
	b.mu.Lock()
	b.used[name] = true
	b.mu.Unlock()
	return tensor.Weight{Name: name, DType: in.DType, Shape: in.Shape, Data: data}, true
}

// Has reports whether the checkpoint holds name, without consuming it.
func (b *Binder) Has(name string) bool {
	_, ok := b.s.Info(name)
	return ok
}

// Linear returns the weight of the linear (or embedding) module at prefix:
// prefix+".weight", dense, or MLX-quantized when prefix+".scales" exists. A
// quantized weight takes bits and group size from the QuantConfig (or, when
// the config is silent, from the shapes if only one setting fits) and comes
// back as Weight{Name: prefix, DType: U32, Shape: logical [out, in], Data:
// packed words, Quant, Scales, Biases, ScaleDType}; a dense one has Name
// prefix+".weight". A missing weight is recorded as missing, a shape or dtype
// problem as an error (see Err); both return a zero Weight.
func (b *Binder) Linear(prefix string) tensor.Weight {
	wName, sName, bName := prefix+".weight", prefix+".scales", prefix+".biases"
	if !b.Has(sName) {
		w := b.Tensor(wName)
		if w.Data != nil && !isFloat(w.DType) {
			b.fail(fmt.Errorf("tensor %q has dtype %s; a dense linear weight must be F32, F16 or BF16", wName, w.DType))
			return tensor.Weight{}
		}
		return w
	}
	w := b.Tensor(wName)
	scales, _ := b.Optional(sName)
	biases, hasBiases := b.Optional(bName)
	if w.Data == nil {
		return tensor.Weight{}
	}
	if !hasBiases {
		b.fail(fmt.Errorf("%q has scales but no biases (Hearth reads MLX affine quantization only)", prefix))
		return tensor.Weight{}
	}
	if w.DType != tensor.U32 {
		b.fail(fmt.Errorf("tensor %q has dtype %s; a quantized weight must be U32", wName, w.DType))
		return tensor.Weight{}
	}
	if !isFloat(scales.DType) || biases.DType != scales.DType {
		b.fail(fmt.Errorf("%q: scales are %s and biases %s; both must be the same of F32, F16 or BF16", prefix, scales.DType, biases.DType))
		return tensor.Weight{}
	}
	if !slices.Equal(scales.Shape, biases.Shape) {
		b.fail(fmt.Errorf("%q: scales shape %v and biases shape %v differ", prefix, scales.Shape, biases.Shape))
		return tensor.Weight{}
	}
	q, err := b.q.quantFor(prefix, w.Shape, scales.Shape)
	if err != nil {
		b.fail(err)
		return tensor.Weight{}
	}
	logical, err := quantLogicalShape(prefix, w.Shape, scales.Shape, q)
	if err != nil {
		b.fail(err)
		return tensor.Weight{}
	}
	return tensor.Weight{
		Name: prefix, DType: tensor.U32, Shape: logical, Data: w.Data,
		Quant: &q, Scales: scales.Data, Biases: biases.Data, ScaleDType: scales.DType,
	}
}

// fail records a structural error; the first one is kept.
func (b *Binder) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = err
	}
}

// Err returns the first structural error (shape or dtype) recorded so far,
// or nil.
func (b *Binder) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// Audit closes a load. It returns an *AuditError listing every tensor that
// was requested but missing and every tensor in the files that nothing
// consumed, except unused tensors whose names match one of the ignore globs
// ("*" matches any run of characters, dots included, so
// "*.rotary_emb.inv_freq" matches every layer's). A structural error from
// Err is returned too, joined with the AuditError when there are both.
func (b *Binder) Audit(ignore []string) error {
	b.mu.Lock()
	var ae AuditError
	for name := range b.missing {
		ae.Missing = append(ae.Missing, name)
	}
	for _, name := range b.s.Names() {
		if !b.used[name] && !matchAny(ignore, name) {
			ae.Unused = append(ae.Unused, name)
		}
	}
	structural := b.err
	b.mu.Unlock()
	sort.Strings(ae.Missing)
	if len(ae.Missing) == 0 && len(ae.Unused) == 0 {
		return structural
	}
	return errors.Join(structural, &ae)
}

// matchAny reports whether name matches any of the globs.
func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if globMatch(g, name) {
			return true
		}
	}
	return false
}

// globMatch matches name against pattern, where "*" matches any run of
// characters (dots included) and every other character matches itself.
func globMatch(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(name, p)
		if i < 0 {
			return false
		}
		name = name[i+len(p):]
	}
	return len(name) >= len(last) && strings.HasSuffix(name, last)
}

// AuditError is the weight audit's verdict: tensors the model needed that
// the checkpoint lacks, and tensors the checkpoint has that nothing used.
type AuditError struct {
	Missing, Unused []string
}

// auditListMax is how many names Error prints per list.
const auditListMax = 10

// Error lists the missing and unused tensors (sorted, at most auditListMax
// of each) and says what that means for the user.
func (e *AuditError) Error() string {
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, fmt.Sprintf("%s missing: %s", plural(len(e.Missing), "tensor"), nameList(e.Missing)))
	}
	if len(e.Unused) > 0 {
		parts = append(parts, fmt.Sprintf("%s in the checkpoint unused: %s", plural(len(e.Unused), "tensor"), nameList(e.Unused)))
	}
	hint := "a model variant Hearth does not support, whose extra weights it would ignore"
	if len(e.Missing) > 0 {
		hint = "an incomplete download (run hearth pull again) or a model variant Hearth does not support"
	}
	return "weight audit: " + strings.Join(parts, "; ") + " — likely " + hint
}

// plural formats "1 tensor" or "3 tensors".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// nameList quotes sorted names, truncated to auditListMax with a count of
// the rest.
func nameList(names []string) string {
	sorted := slices.Sorted(slices.Values(names))
	shown := sorted[:min(len(sorted), auditListMax)]
	quoted := make([]string, len(shown))
	for i, n := range shown {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	s := strings.Join(quoted, ", ")
	if rest := len(sorted) - len(shown); rest > 0 {
		s += fmt.Sprintf(" … and %d more", rest)
	}
	return s
}
