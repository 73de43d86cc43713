// Package weights reads safetensors checkpoints (mmap, sharded) and
// MLX-quantized tensors, and audits that a model consumed exactly the tensors
// it should.
//
// A checkpoint directory holds model.safetensors, or
// model.safetensors.index.json and the shards it names, or any set of
// *.safetensors files. Scan reads only headers (sizes and parameter counts
// without loading); Open maps every shard read-only, and a Binder hands the
// tensors to model code by checkpoint name, dense or MLX-quantized, and
// closes the load with an audit. Every parser here treats its input as
// hostile: a bad file is an error that names it, never a panic.
package weights

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"hearth/engine/tensor"
)

// Info describes one tensor from a safetensors header.
type Info struct {
	Name   string
	DType  tensor.DType
	Shape  []int
	File   string // base name of the shard holding it
	Offset int64  // absolute byte offset in File of the first byte of data
	Length int64  // bytes
}

// Summary is what a header-only scan of a checkpoint directory knows.
type Summary struct {
	Tensors []Info // sorted by name
	// ParamCount counts logical parameters: a quantized weight counts its
	// dequantized elements; scales and biases are not counted.
	ParamCount int64
	Bytes      int64    // total tensor bytes on disk
	Files      []string // base names of the safetensors files, sorted
}

// File names of a checkpoint directory.
const (
	singleFile = "model.safetensors"
	indexFile  = "model.safetensors.index.json"
)

// maxSmallJSON caps the size of the index and config files we read whole.
const maxSmallJSON = 64 << 20

// ReadHeader reads only the header bytes of the safetensors file at path and
// returns its tensors (sorted by name) and its __metadata__.
func ReadHeader(path string) ([]Info, map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	name := filepath.Base(path)
	infos, meta, err := parseHeader(f, st.Size(), name)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return infos, meta, nil
}

// Scan reads the headers of the checkpoint in dir (model.safetensors, or
// model.safetensors.index.json and its shards, or every *.safetensors) and
// sums sizes and parameters without loading any tensor. When the checkpoint
// holds MLX-quantized weights, q (config.json's quantization, which the
// checkpoint package reads) gives their logical shapes for the count.
func Scan(dir string, q QuantConfig) (*Summary, error) {
	l, err := discover(dir)
	if err != nil {
		return nil, err
	}
	perFile := make([][]Info, len(l.files))
	for i, f := range l.files {
		if perFile[i], _, err = ReadHeader(filepath.Join(dir, f)); err != nil {
			return nil, err
		}
	}
	all, err := l.assemble(perFile)
	if err != nil {
		return nil, err
	}
	s := &Summary{Tensors: all, Files: append([]string(nil), l.files...)}
	byName := make(map[string]Info, len(all))
	for _, in := range all {
		byName[in.Name] = in
		s.Bytes += in.Length
	}
	for _, in := range all {
		prefix, kind := splitQuantName(in.Name)
		if (kind == "scales" || kind == "biases") && isQuantWeight(byName, prefix) {
			continue // scales and biases of a quantized weight
		}
		if kind == "weight" && isQuantWeight(byName, prefix) {
			wq, err := q.quantFor(prefix, in.Shape, byName[prefix+".scales"].Shape)
			if err != nil {
				return nil, err
			}
			logical, err := quantLogicalShape(prefix, in.Shape, byName[prefix+".scales"].Shape, wq)
			if err != nil {
				return nil, err
			}
			s.ParamCount += int64(tensor.Elements(logical))
			continue
		}
		s.ParamCount += in.Length / int64(in.DType.Size())
	}
	return s, nil
}

// splitQuantName splits "p.weight", "p.scales" and "p.biases" into p and
// the suffix; kind is "" for any other name.
func splitQuantName(name string) (prefix, kind string) {
	for _, k := range []string{"weight", "scales", "biases"} {
		if p, ok := strings.CutSuffix(name, "."+k); ok {
			return p, k
		}
	}
	return name, ""
}

// isQuantWeight reports whether prefix names an MLX-quantized weight: a U32
// prefix.weight beside prefix.scales.
func isQuantWeight(byName map[string]Info, prefix string) bool {
	w, ok := byName[prefix+".weight"]
	_, hasScales := byName[prefix+".scales"]
	return ok && hasScales && w.DType == tensor.U32
}

// readSmall reads a whole file that must stay under maxSmallJSON bytes.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > maxSmallJSON {
		return nil, fmt.Errorf("%s: %d bytes is over the %d-byte limit", filepath.Base(path), st.Size(), maxSmallJSON)
	}
	return os.ReadFile(path)
}

// layout is the set of safetensors files that make up a checkpoint.
type layout struct {
	files []string          // base names, sorted
	index map[string]string // tensor → file, from the index; nil without one
}

// discover finds the safetensors files of the checkpoint in dir.
func discover(dir string) (layout, error) {
	if st, err := os.Stat(filepath.Join(dir, singleFile)); err == nil && !st.IsDir() {
		return layout{files: []string{singleFile}}, nil
	}
	b, err := readSmall(filepath.Join(dir, indexFile))
	switch {
	case err == nil:
		return parseIndex(dir, b)
	case !errors.Is(err, fs.ErrNotExist):
		return layout{}, err
	}
	matches, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return layout{}, err
	}
	var l layout
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && !st.IsDir() {
			l.files = append(l.files, filepath.Base(m))
		}
	}
	if len(l.files) == 0 {
		return layout{}, fmt.Errorf("%s: no %s, %s or other *.safetensors files (is this a model directory?)", dir, singleFile, indexFile)
	}
	sort.Strings(l.files)
	return l, nil
}

// parseIndex reads model.safetensors.index.json and checks that every shard
// it names is present in dir.
func parseIndex(dir string, b []byte) (layout, error) {
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return layout{}, fmt.Errorf("%s: %w", indexFile, err)
	}
	if len(idx.WeightMap) == 0 {
		return layout{}, fmt.Errorf("%s: weight_map lists no tensors", indexFile)
	}
	seen := map[string]bool{}
	l := layout{index: idx.WeightMap}
	for name, f := range idx.WeightMap {
		if f == "" || f == "." || f == ".." || strings.ContainsAny(f, `/\`) {
			return layout{}, fmt.Errorf("%s: tensor %q is mapped to %q, which is not a file name in the model directory", indexFile, name, f)
		}
		if seen[f] {
			continue
		}
		seen[f] = true
		st, err := os.Stat(filepath.Join(dir, f))
		if errors.Is(err, fs.ErrNotExist) {
			return layout{}, fmt.Errorf("%s: listed in %s but absent (incomplete download?)", f, indexFile)
		}
		if err != nil {
			return layout{}, err
		}
		if st.IsDir() {
			return layout{}, fmt.Errorf("%s: listed in %s but is a directory", f, indexFile)
		}
		l.files = append(l.files, f)
	}
	sort.Strings(l.files)
	return l, nil
}

// assemble merges the per-file tensor lists (in l.files order) into one list
// sorted by name, refusing a tensor held by two files and, with an index, a
// tensor missing from the shard the index names.
func (l layout) assemble(perFile [][]Info) ([]Info, error) {
	byName := map[string]Info{}
	var all []Info
	for _, infos := range perFile {
		for _, in := range infos {
			if prev, dup := byName[in.Name]; dup {
				return nil, fmt.Errorf("tensor %q is in both %s and %s", in.Name, prev.File, in.File)
			}
			byName[in.Name] = in
			all = append(all, in)
		}
	}
	for name, f := range l.index {
		in, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("%s: tensor %q should be in %s, which does not hold it (incomplete download?)", indexFile, name, f)
		}
		if in.File != f {
			return nil, fmt.Errorf("%s: tensor %q should be in %s but is in %s", indexFile, name, f, in.File)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all, nil
}
