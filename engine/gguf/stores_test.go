package gguf_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/gguf"
	"hearth/engine/registry"
)

// servableGGUF is qwen3-f32 converted to GGUF with chat-tiny's tokenizer
// and template in its metadata: a file that serves a chat on its own.
func servableGGUF(t *testing.T) string {
	c := convert(t, "qwen3-f32", gguf.F32)
	c.kv = slices.DeleteFunc(slices.Clone(c.kv), func(kv gguf.KV) bool { return strings.HasPrefix(kv.Key, "tokenizer.") })
	c.kv = append(c.kv, tokenizerKV(t)...)
	return c.write(t, "tiny.gguf")
}

// ollamaStore lays out an Ollama models folder as Ollama writes it:
// manifests/HOST/NAMESPACE/MODEL/TAG naming blobs/sha256-HEX by digest.
// Each of models maps a manifest path to its layers (media type → blob
// content; "" content names a missing blob).
func ollamaStore(t *testing.T, root string, manifests map[string]map[string][]byte) {
	t.Helper()
	for rel, layers := range manifests {
		var m struct {
			SchemaVersion int              `json:"schemaVersion"`
			Layers        []map[string]any `json:"layers"`
		}
		m.SchemaVersion = 2
		for media, data := range layers {
			hex := strings.Repeat("0", 64)
			if data != nil {
				hex = digestHex(data)
				write(t, filepath.Join(root, "blobs", "sha256-"+hex), data)
			}
			m.Layers = append(m.Layers, map[string]any{"mediaType": media, "digest": "sha256:" + hex, "size": len(data)})
		}
		raw, _ := json.Marshal(m)
		write(t, filepath.Join(root, "manifests", rel), raw)
	}
}

// TestStores: hearth lists and serves the GGUF models Ollama and LM Studio
// downloaded, where they lie, under their tools' names; Ollama's blob
// (a file without the .gguf extension) is read by its magic; malformed
// manifests, foreign digests and missing blobs are skipped, not fatal.
func TestStores(t *testing.T) {
	blob, err := os.ReadFile(servableGGUF(t))
	if err != nil {
		t.Fatal(err)
	}
	ollama, lms := t.TempDir(), t.TempDir()
	const model = "application/vnd.ollama.image.model"
	ollamaStore(t, ollama, map[string]map[string][]byte{
		"registry.ollama.ai/library/tiny/latest": {model: blob, "application/vnd.ollama.image.template": []byte("{{ .Prompt }}")},
		"registry.ollama.ai/someone/tiny/q8":     {model: blob},
		"registry.ollama.ai/library/gone/latest": {model: nil},                                     // its blob is missing
		"registry.ollama.ai/library/proj/latest": {"application/vnd.ollama.image.projector": blob}, // no model layer
	})
	write(t, filepath.Join(ollama, "manifests", "registry.ollama.ai", "library", "bad", "latest"), []byte("{not json"))
	write(t, filepath.Join(ollama, "manifests", "registry.ollama.ai", "library", "evil", "latest"),
		[]byte(`{"layers":[{"mediaType":"`+model+`","digest":"sha256:../../../etc/passwd"}]}`))
	write(t, filepath.Join(lms, "pub", "repo", "tiny-F32.gguf"), blob)
	write(t, filepath.Join(lms, "pub", "repo", "mmproj-tiny-F32.gguf"), blob)

	reg := registry.New(t.TempDir()).WithStores(registry.Stores{Ollama: ollama, LMStudio: []string{lms, filepath.Join(lms, "absent")}})
	list, err := reg.List()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rec := range list {
		names = append(names, rec.Name())
		if rec.Tier == registry.TierUnsupported || rec.ModelType != "qwen3" || rec.Store == "" {
			t.Errorf("%s: %+v", rec.Name(), rec)
		}
	}
	want := []string{"lmstudio:pub/repo/tiny-F32.gguf", "ollama:someone/tiny:q8", "ollama:tiny:latest"}
	if !slices.Equal(names, want) {
		t.Fatalf("listed %v, want %v", names, want)
	}
	if d := list[2].Digest; d != "sha256:"+digestHex(blob) {
		t.Errorf("digest %q, want the blob's", d)
	}

	for _, name := range []string{"ollama:tiny:latest", "tiny:latest", "lmstudio:pub/repo/tiny-F32.gguf"} {
		rec, err := reg.ResolveName(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if rec.Store == "" || !strings.HasPrefix(rec.Dir, ollama) && !strings.HasPrefix(rec.Dir, lms) {
			t.Errorf("%s resolved to %+v", name, rec)
		}
	}
	_, err = reg.ResolveName("ollama:tiny:lates")
	if !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), `did you mean ollama:tiny:latest`) || strings.Contains(err.Error(), ollama) {
		t.Errorf("a typo: %v", err)
	}

	// Served from the blob itself: the same answer as the .gguf file.
	rec, _ := reg.ResolveName("tiny:latest")
	msgs := json.RawMessage(`[{"role":"user","content":"Hello, what is Hearth?"}]`)
	var answers []string
	for _, dir := range []string{rec.Dir, filepath.Join(lms, "pub", "repo", "tiny-F32.gguf")} {
		r, err := engine.Open(dir, engine.RunnerOptions{Options: engine.Options{Backend: "cpu"}})
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		_, err = r.Generate(context.Background(), engine.Request{Messages: msgs, MaxTokens: 8}, func(d engine.Delta) error {
			sb.WriteString(d.Content)
			return nil
		})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, sb.String())
	}
	if answers[0] != answers[1] || answers[0] == "" {
		t.Errorf("the Ollama blob answers %q, the .gguf file %q", answers[0], answers[1])
	}
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func digestHex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
