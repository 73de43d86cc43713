// Tests of checkpoint discovery and Scan: single file, sharded index, a
// directory of loose files, and the ways a download can be incomplete.

package weights

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"hearth/engine/tensor"
)

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

// f32 returns a dense F32 weight holding vals.
func f32(name string, shape []int, vals ...float32) tensor.Weight {
	data := make([]byte, 0, 4*len(vals))
	for _, v := range vals {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
	}
	return tensor.Weight{Name: name, DType: tensor.F32, Shape: shape, Data: data}
}

// randF32 returns a dense F32 weight of the shape filled with values in [-1, 1).
func randF32(rng *rand.Rand, name string, shape ...int) tensor.Weight {
	vals := make([]float32, tensor.Elements(shape))
	for i := range vals {
		vals[i] = rng.Float32()*2 - 1
	}
	return f32(name, shape, vals...)
}

// writeFile writes ws as dir/name and fails the test on error.
func writeFile(t testing.TB, dir, name string, ws ...tensor.Weight) {
	t.Helper()
	if err := Write(filepath.Join(dir, name), ws, nil); err != nil {
		t.Fatal(err)
	}
}

// writeJSON marshals v into dir/name.
func writeJSON(t testing.TB, dir, name string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// shardedDir writes a two-shard checkpoint with its index.
func shardedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	writeFile(t, dir, "model-00001-of-00002.safetensors", randF32(rng, "model.embed_tokens.weight", 8, 4), randF32(rng, "model.norm.weight", 4))
	writeFile(t, dir, "model-00002-of-00002.safetensors", randF32(rng, "lm_head.weight", 8, 4))
	writeJSON(t, dir, indexFile, map[string]any{
		"metadata": map[string]any{"total_size": 264},
		"weight_map": map[string]string{
			"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
			"model.norm.weight":         "model-00001-of-00002.safetensors",
			"lm_head.weight":            "model-00002-of-00002.safetensors",
		},
	})
	return dir
}

func TestScanSharded(t *testing.T) {
	dir := shardedDir(t)
	s, err := Scan(dir, QuantConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}; !reflect.DeepEqual(s.Files, want) {
		t.Errorf("Files = %v, want %v", s.Files, want)
	}
	var names []string
	for _, in := range s.Tensors {
		names = append(names, in.Name+"@"+in.File)
	}
	want := []string{
		"lm_head.weight@model-00002-of-00002.safetensors",
		"model.embed_tokens.weight@model-00001-of-00002.safetensors",
		"model.norm.weight@model-00001-of-00002.safetensors",
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("tensors = %v, want %v", names, want)
	}
	if s.ParamCount != 8*4+4+8*4 || s.Bytes != 4*(8*4+4+8*4) {
		t.Errorf("ParamCount, Bytes = %d, %d; want 68, 272", s.ParamCount, s.Bytes)
	}

	set, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	if got := set.Names(); !reflect.DeepEqual(got, []string{"lm_head.weight", "model.embed_tokens.weight", "model.norm.weight"}) {
		t.Errorf("Names = %v", got)
	}
}

func TestCheckpointErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"empty directory", func(t *testing.T, dir string) {}, "no model.safetensors, model.safetensors.index.json or other *.safetensors files"},
		{"missing shard", func(t *testing.T, dir string) {
			writeFile(t, dir, "model-00001-of-00002.safetensors", randF32(rng, "a", 2))
			writeJSON(t, dir, indexFile, map[string]any{"weight_map": map[string]string{
				"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})
		}, "model-00002-of-00002.safetensors: listed in model.safetensors.index.json but absent (incomplete download?)"},
		{"tensor not in its shard", func(t *testing.T, dir string) {
			writeFile(t, dir, "s1.safetensors", randF32(rng, "a", 2))
			writeFile(t, dir, "s2.safetensors", randF32(rng, "b", 2))
			writeJSON(t, dir, indexFile, map[string]any{"weight_map": map[string]string{
				"a": "s1.safetensors", "b": "s2.safetensors", "c": "s2.safetensors"}})
		}, `model.safetensors.index.json: tensor "c" should be in s2.safetensors, which does not hold it`},
		{"tensor in the wrong shard", func(t *testing.T, dir string) {
			writeFile(t, dir, "s1.safetensors", randF32(rng, "a", 2))
			writeFile(t, dir, "s2.safetensors", randF32(rng, "b", 2))
			writeJSON(t, dir, indexFile, map[string]any{"weight_map": map[string]string{"a": "s2.safetensors", "b": "s1.safetensors"}})
		}, `should be in s`},
		{"index escapes the directory", func(t *testing.T, dir string) {
			writeJSON(t, dir, indexFile, map[string]any{"weight_map": map[string]string{"a": "../x.safetensors"}})
		}, `tensor "a" is mapped to "../x.safetensors", which is not a file name in the model directory`},
		{"index not JSON", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, indexFile), []byte("{"), 0o644)
		}, "model.safetensors.index.json: unexpected end of JSON input"},
		{"empty index", func(t *testing.T, dir string) {
			writeJSON(t, dir, indexFile, map[string]any{"weight_map": map[string]string{}})
		}, "weight_map lists no tensors"},
		{"tensor in two files", func(t *testing.T, dir string) {
			writeFile(t, dir, "a.safetensors", randF32(rng, "x", 2))
			writeFile(t, dir, "b.safetensors", randF32(rng, "x", 2))
		}, `tensor "x" is in both a.safetensors and b.safetensors`},
		{"truncated shard", func(t *testing.T, dir string) {
			writeFile(t, dir, "model.safetensors", randF32(rng, "x", 64))
			p := filepath.Join(dir, "model.safetensors")
			st, _ := os.Stat(p)
			os.Truncate(p, st.Size()-100)
		}, `model.safetensors: tensor "x" ends at byte`},
		{"zero-length file", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "model.safetensors"), nil, 0o644)
		}, "model.safetensors: file has 0 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			if _, err := Scan(dir, QuantConfig{}); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Scan error = %v, want it to contain %q", err, tt.want)
			}
			s, err := Open(dir)
			if err == nil {
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestDiscoverLooseFiles(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	writeFile(t, dir, "b.safetensors", randF32(rng, "y", 3))
	writeFile(t, dir, "a.safetensors", randF32(rng, "x", 2))
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a shard"), 0o644)
	s, err := Scan(dir, QuantConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a.safetensors", "b.safetensors"}; !reflect.DeepEqual(s.Files, want) {
		t.Errorf("Files = %v, want %v", s.Files, want)
	}
	if s.ParamCount != 5 {
		t.Errorf("ParamCount = %d, want 5", s.ParamCount)
	}
}

func TestScanPrefersSingleFile(t *testing.T) {
	// model.safetensors wins over stray files (as transformers loads it).
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 8))
	writeFile(t, dir, "model.safetensors", randF32(rng, "x", 2))
	writeFile(t, dir, "consolidated.safetensors", randF32(rng, "x", 2))
	s, err := Scan(dir, QuantConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Files, []string{"model.safetensors"}) {
		t.Errorf("Files = %v, want [model.safetensors]", s.Files)
	}
}
