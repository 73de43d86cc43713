package gguf

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"hearth/engine/tensor"
	"hearth/engine/weights"
)

// Checkpoint is a GGUF model read as the Hugging Face checkpoint it was
// converted from: the config.json its metadata gives, the MLX
// quantization its quantized tensors become, and a plan that places each
// tensor under its transformers name in a weights.Set (Open). Hearth's
// families bind it as they bind safetensors (docs/design/gguf.md).
type Checkpoint struct {
	Model      *Model
	Arch       string // general.architecture
	ConfigJSON []byte // the synthesized config.json
	// Quant gives each quantized weight its bits and group size of 32
	// (per path: a file mixes types).
	Quant weights.QuantConfig
	// Summary is what the Set will hold, from the headers alone: names,
	// dtypes and shapes after conversion, and their bytes in memory.
	Summary *weights.Summary
	// Label names the storage as llama.cpp's file types do ("q4_0",
	// "q4_k_m", "f16"), or the type holding most bytes.
	Label string

	plan    []placement
	inPlace int64 // bytes used straight from the file
}

// conversion is what a tensor goes through on its way into the Set.
type conversion uint8

const (
	asStored conversion = iota // dense as stored (rows un-permuted when heads > 0)
	toF32                      // decoded to F32: Gemma's shifted norms, 1-D quantized tensors
	toAffine                   // repacked into MLX affine groups (Affine), a matrix or stacked experts
)

// placement is one GGUF tensor's way into the Set.
type placement struct {
	src   TensorInfo
	name  string // transformers name
	shape []int  // transformers order: GGUF dims reversed
	how   conversion
	heads int  // un-permute rows over this many heads (0: none)
	shift bool // subtract the 1 Gemma's converter added
}

// denseTypes are the GGUF types a dense weight keeps as stored.
var denseTypes = map[GGMLType]tensor.DType{F32: tensor.F32, F16: tensor.F16, BF16: tensor.BF16}

// Read reads the GGUF model at path (one file, or any split of one) as a
// Checkpoint. A file Hearth cannot make a config of (unknown architecture,
// missing keys) gives only the error. A file with tensors Hearth cannot
// run (Q8_K, …) gives the Checkpoint, without Summary, and the error: a
// listing shows what the model is, a load refuses it (Open).
func Read(path string) (*Checkpoint, error) {
	m, err := Open(path)
	if err != nil {
		return nil, err
	}
	a, raw, err := m.hfConfig()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := &Checkpoint{Model: m, ConfigJSON: raw, Quant: weights.QuantConfig{PerPath: map[string]*tensor.Quant{}}}
	c.Arch, _ = m.Meta().String("general.architecture")
	var cfg struct {
		Heads   int `json:"num_attention_heads"`
		KVHeads int `json:"num_key_value_heads"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	c.Label = label(m)
	if err := c.planTensors(a, cfg.Heads, cfg.KVHeads); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	c.Summary = c.summary()
	return c, nil
}

// planTensors decides every tensor's placement, refusing types Hearth
// cannot run (naming the first such tensor and counting the rest).
func (c *Checkpoint) planTensors(a arch, heads, kvHeads int) error {
	var refused []string
	var first error
	for _, t := range c.Model.Tensors {
		if configTensors[t.Name] {
			continue
		}
		name, _, _ := a.hfName(t.Name)
		p := placement{src: t, name: name, shape: make([]int, len(t.Dims))}
		for i, d := range t.Dims {
			p.shape[len(t.Dims)-1-i] = int(d)
		}
		p.shift = a.normShift && strings.HasSuffix(name, "norm.weight")
		if p.heads = a.permuted(name, heads, kvHeads); p.heads > 0 {
			if rows := p.shape[0]; rows%(2*p.heads) != 0 {
				return fmt.Errorf("tensor %q: %d rows do not split into %d heads of an even size (its shape %v does not fit the config)", t.Name, rows, p.heads, p.shape)
			}
		}
		_, dense := denseTypes[t.Type]
		q, affine := affineQuant[t.Type]
		switch {
		case dense && !p.shift:
			p.how = asStored
		case (dense || affine) && len(t.Dims) == 1:
			p.how = toF32
		case affine && (len(t.Dims) == 2 || len(t.Dims) == 3) && !p.shift: // 3-D: stacked experts
			p.how = toAffine
			c.Quant.PerPath[strings.TrimSuffix(name, ".weight")] = &q
		default:
			refused = append(refused, t.Name)
			if first == nil {
				first = refusal(t)
			}
			continue
		}
		c.plan = append(c.plan, p)
	}
	if first != nil && len(refused) > 1 {
		return fmt.Errorf("%w (and %d more tensors Hearth cannot run)", first, len(refused)-1)
	}
	return first
}

// refusal says why Hearth cannot run tensor t.
func refusal(t TensorInfo) error {
	if _, ok := affineQuant[t.Type]; ok {
		return fmt.Errorf("tensor %q: %s %v is not a matrix Hearth can repack", t.Name, t.Type, t.Dims)
	}
	return fmt.Errorf("tensor %q is %s, not a weight type Hearth runs (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K)", t.Name, t.Type)
}

// Open maps the model's files and places every tensor in a Set under its
// transformers name, converting those that need it (docs/design/gguf.md).
// The Set honours opt.HugePages only when most of the file's bytes are
// used as they are (a quantized file is converted, and its mapping is
// barely read after).
func (c *Checkpoint) Open(opt weights.OpenOptions) (*weights.Set, error) {
	if c.Summary == nil {
		return nil, fmt.Errorf("%s: the model has tensors Hearth cannot run", c.Model.Paths[0])
	}
	var total int64
	for _, f := range c.Model.Files {
		total += f.Size
	}
	opt.HugePages = opt.HugePages && 2*c.inPlace >= total
	s, err := weights.MapFiles(c.Model.Paths, opt)
	if err != nil {
		return nil, err
	}
	for _, p := range c.plan {
		if err := place(s, p, filepath.Base(c.Model.Paths[p.src.File])); err != nil {
			s.Close()
			return nil, fmt.Errorf("tensor %q (%s): %w", p.src.Name, p.name, err)
		}
	}
	return s, nil
}

// place puts one tensor into s.
func place(s *weights.Set, p placement, fileName string) error {
	file := s.Mapped(p.src.File)
	if file == nil || p.src.Offset+p.src.Size > int64(len(file)) {
		return fmt.Errorf("outside its file")
	}
	raw := file[p.src.Offset : p.src.Offset+p.src.Size]
	in := weights.Info{Name: p.name, Shape: p.shape, File: fileName, Offset: p.src.Offset}
	rows := p.shape[0]
	if p.heads > 0 {
		buf := make([]byte, len(raw))
		unpermuteRows(buf, raw, rows, p.heads)
		raw = buf
	}
	switch p.how {
	case asStored:
		in.DType = denseTypes[p.src.Type]
		if p.heads > 0 { // raw is on the Go heap: move it beside the mappings
			return placeCopy(s, in, raw)
		}
		return s.Place(in, raw)
	case toF32:
		vals, err := Dequantize(p.src.Type, raw, int(p.src.Elements()))
		if err != nil {
			return err
		}
		out, err := s.Alloc(4 * len(vals))
		if err != nil {
			return err
		}
		for i, v := range vals {
			if p.shift {
				v -= 1 // exact for weights in [-0.5, 1]: the 1 + w the model computes is the stored value
			}
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
		in.DType = tensor.F32
		return s.Place(in, out)
	}
	outer, cols := p.shape[:len(p.shape)-1], p.shape[len(p.shape)-1]
	w, err := Affine(p.src.Type, raw, tensor.Elements(outer), cols)
	if err != nil {
		return err
	}
	prefix := strings.TrimSuffix(p.name, ".weight")
	groups := cols / w.Quant.GroupSize
	for _, part := range []struct {
		name  string
		dt    tensor.DType
		shape []int
		data  []byte
	}{
		{p.name, tensor.U32, append(slices.Clone(outer), cols*w.Quant.Bits/32), w.Data},
		{prefix + ".scales", w.ScaleDType, append(slices.Clone(outer), groups), w.Scales},
		{prefix + ".biases", w.ScaleDType, append(slices.Clone(outer), groups), w.Biases},
	} {
		pi := in
		pi.Name, pi.DType, pi.Shape = part.name, part.dt, part.shape
		if err := placeCopy(s, pi, part.data); err != nil {
			return err
		}
	}
	return nil
}

// placeCopy places data copied into memory the Set owns (outside the Go
// heap, freed at Close).
func placeCopy(s *weights.Set, in weights.Info, data []byte) error {
	buf, err := s.Alloc(len(data))
	if err != nil {
		return err
	}
	copy(buf, data)
	return s.Place(in, buf)
}

// summary is the Set Open will make, from the plan alone. Affine picks
// the scales' dtype from the values: the legacy types' are counted as
// F16, which they are unless a bias overflows a half float; the
// k-quants' as F32, which they are unless every sub-block product
// happens to be a half (then the count is high, never low, but for an
// absurd legacy file).
func (c *Checkpoint) summary() *weights.Summary {
	sum := &weights.Summary{}
	for _, p := range c.Model.Paths {
		sum.Files = append(sum.Files, filepath.Base(p))
	}
	add := func(p placement, name string, dt tensor.DType, shape []int) {
		n := int64(tensor.Elements(shape)) * int64(dt.Size())
		sum.Tensors = append(sum.Tensors, weights.Info{Name: name, DType: dt, Shape: shape, File: sum.Files[p.src.File], Offset: p.src.Offset, Length: n})
		sum.Bytes += n
	}
	for _, p := range c.plan {
		sum.ParamCount += int64(p.src.Elements())
		switch p.how {
		case asStored:
			add(p, p.name, denseTypes[p.src.Type], p.shape)
			if p.heads == 0 {
				c.inPlace += p.src.Size
			}
		case toF32:
			add(p, p.name, tensor.F32, p.shape)
		case toAffine:
			outer, cols := p.shape[:len(p.shape)-1], p.shape[len(p.shape)-1]
			q := affineQuant[p.src.Type]
			dt := tensor.F32
			if blocks[p.src.Type].elems == 32 {
				dt = tensor.F16
			}
			prefix := strings.TrimSuffix(p.name, ".weight")
			add(p, p.name, tensor.U32, append(slices.Clone(outer), cols*q.Bits/32))
			add(p, prefix+".scales", dt, append(slices.Clone(outer), cols/q.GroupSize))
			add(p, prefix+".biases", dt, append(slices.Clone(outer), cols/q.GroupSize))
		}
	}
	slices.SortFunc(sum.Tensors, func(a, b weights.Info) int { return cmp.Compare(a.Name, b.Name) })
	return sum
}

// fileTypes are llama.cpp's llama_ftype names (general.file_type) for the
// files Hearth may meet.
var fileTypes = map[uint64]string{
	0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 7: "q8_0", 8: "q5_0", 9: "q5_1",
	10: "q2_k", 11: "q3_k_s", 12: "q3_k_m", 13: "q3_k_l", 14: "q4_k_s", 15: "q4_k_m",
	16: "q5_k_s", 17: "q5_k_m", 18: "q6_k", 32: "bf16",
}

// label names the storage: general.file_type when it is one of
// fileTypes, else the type holding most bytes.
func label(m *Model) string {
	if ft, ok := m.Meta().Uint("general.file_type"); ok {
		if l, ok := fileTypes[ft]; ok {
			return l
		}
	}
	bytes := map[GGMLType]int64{}
	for _, t := range m.Tensors {
		bytes[t.Type] += t.Size
	}
	best, most := GGMLType(0), int64(-1)
	for t, n := range bytes {
		if n > most || n == most && t < best {
			best, most = t, n
		}
	}
	return strings.ToLower(best.String())
}
