// Package testmodels locates the small oracle-checked models committed under
// the repository's testdata/models, so tests of any package can load them.
package testmodels

import (
	"encoding/json"
	"fmt"
	"hearth/engine/tensor"
	"hearth/engine/weights"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Root is the absolute path of testdata/models.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "models")
}

// Manifest is testdata/models/manifest.json: one entry per model and
// variant, written by tools/oracle/make_goldens.py.
type Manifest struct {
	Oracle  string  `json:"oracle"`
	Entries []Entry `json:"entries"`
}

// Entry is one oracle-checked model.
type Entry struct {
	Name      string `json:"name"`
	ModelType string `json:"model_type"`
	Variant   string `json:"variant"`
	Dir       string `json:"dir"`
	Steps     int    `json:"steps"`
	Tolerance struct {
		MaxAbsLogit float64 `json:"max_abs_logit"`
		Why         string  `json:"why"`
	} `json:"tolerance"`
}

// Path is the entry's model directory.
func (e Entry) Path() string { return filepath.Join(Root(), e.Dir) }

// Golden is an entry's golden.json.
type Golden struct {
	Script       string      `json:"script"`
	Transformers string      `json:"transformers"`
	PromptIDs    []int32     `json:"prompt_ids"`
	GreedyIDs    []int32     `json:"greedy_ids"`
	Logits       [][]float32 `json:"logits"`
	MinMargin    float64     `json:"min_margin"`
}

// Load reads the manifest.
func Load() (*Manifest, error) {
	raw, err := os.ReadFile(filepath.Join(Root(), "manifest.json"))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	return &m, nil
}

// Golden reads the entry's golden.json.
func (e Entry) Golden() (*Golden, error) {
	raw, err := os.ReadFile(filepath.Join(e.Path(), "golden.json"))
	if err != nil {
		return nil, err
	}
	var g Golden
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("%s/golden.json: %w", e.Name, err)
	}
	return &g, nil
}

// Find returns the entry with the given name.
func (m *Manifest) Find(name string) (Entry, bool) {
	for _, e := range m.Entries {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// Copy copies the model name (a folder of testdata/models) into a
// temporary folder of t, which a test may damage, and returns the folder.
func Copy(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(Root(), name))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// WithTemplate copies the model name (a folder of testdata/models) into a
// temporary folder of t with its tokenizer_config.json chat_template
// replaced by tmpl ("" removes it), and returns the folder.
func WithTemplate(t testing.TB, name, tmpl string) string {
	t.Helper()
	dir := Copy(t, name)
	path := filepath.Join(dir, "tokenizer_config.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if tmpl == "" {
		delete(cfg, "chat_template")
	} else {
		cfg["chat_template"] = tmpl
	}
	if raw, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Rewrite loads the tensors of the checkpoint in dir (a test's copy), lets
// edit change the list (rename, drop, add), and writes it back as one
// model.safetensors.
func Rewrite(t testing.TB, dir string, edit func([]tensor.Weight) []tensor.Weight) {
	t.Helper()
	set, err := weights.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ws []tensor.Weight
	for _, name := range set.Names() {
		info, _ := set.Info(name)
		raw, _ := set.Bytes(name)
		ws = append(ws, tensor.Weight{Name: name, DType: info.DType, Shape: info.Shape, Data: append([]byte(nil), raw...)})
	}
	set.Close()
	if err := weights.Write(filepath.Join(dir, "model.safetensors"), edit(ws), nil); err != nil {
		t.Fatal(err)
	}
}

// SeedConfigs adds to a fuzz corpus the config.json of each named test
// model and every file matching the glob patterns (published configs kept
// beside a family's tests).
func SeedConfigs(f *testing.F, models []string, patterns ...string) {
	f.Helper()
	files := make([]string, 0, len(models))
	for _, m := range models {
		files = append(files, filepath.Join(Root(), m, "config.json"))
	}
	for _, p := range patterns {
		more, err := filepath.Glob(p)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, more...)
	}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
}
