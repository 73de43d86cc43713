package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"hearth/engine/config"
	"hearth/engine/pool"
	"hearth/engine/registry"
	"hearth/internal/testmodels"
)

func TestHealthAndVersion(t *testing.T) {
	ts := startServer(t)
	if r := ts.do(t, http.MethodGet, "/health", "", nil); r.Status != 200 || string(r.Body) != "{\"status\":\"ok\"}\n" {
		t.Errorf("/health = %d %s", r.Status, r.Body)
	}
	if r := ts.do(t, http.MethodGet, "/api/version", "", nil); r.Status != 200 || string(r.Body) != "{\"version\":\"test\"}\n" {
		t.Errorf("/api/version = %d %s", r.Status, r.Body)
	}
}

func TestTokenizeRoundTrip(t *testing.T) {
	ts := startServer(t)
	const text = "Hello, world! 123"
	with, without := ts.tokenize(t, text, true), ts.tokenize(t, text, false)
	if len(without) == 0 || len(with) < len(without) {
		t.Fatalf("tokenize = %v (add_special_tokens) and %v (without)", with, without)
	}
	if got := ts.detokenize(t, without); got != text {
		t.Errorf("detokenize(tokenize(%q)) = %q", text, got)
	}
	special := ts.tokenize(t, "<|im_end|>", false)
	if len(special) != 1 || special[0] != 511 {
		t.Errorf("tokenize(<|im_end|>) = %v, want [511]", special)
	}
	// Counting tokens loads no model onto a backend.
	var ps psResponse
	if r := ts.do(t, http.MethodGet, "/api/ps", "", nil); r.Status != 200 || json.Unmarshal(r.Body, &ps) != nil || len(ps.Models) != 0 {
		t.Errorf("/api/ps after tokenizing = %d %s, want no model loaded", r.Status, r.Body)
	}
}

func TestPS(t *testing.T) {
	ts := startServer(t)
	var before psResponse
	if r := ts.do(t, http.MethodGet, "/api/ps", "", nil); r.Status != 200 || json.Unmarshal(r.Body, &before) != nil {
		t.Fatalf("/api/ps = %d %s", r.Status, r.Body)
	}
	if len(before.Models) != 0 {
		t.Errorf("a model is loaded before any request: %+v", before.Models)
	}
	var out chatOut
	ts.postOK(t, "/v1/chat/completions", chatBody("hi", 2, ""), &out)
	var after psResponse
	json.Unmarshal(ts.do(t, http.MethodGet, "/api/ps", "", nil).Body, &after)
	if len(after.Models) != 1 {
		t.Fatalf("/api/ps after a request: %+v", after)
	}
	m := after.Models[0]
	if m.ID != "chat-tiny" || m.Backend == "" || m.ContextLength != 256 || m.WeightBytes <= 0 || m.Active != 0 || m.LoadedAt.IsZero() {
		t.Errorf("loaded model = %+v", m)
	}
	// Ollama's fields, which its clients read (ollama-js ps() wants name).
	if m.Name != "chat-tiny" || m.Model != "chat-tiny" || m.Size <= 0 || m.Details.Family != "qwen3" || m.Details.Format != "safetensors" {
		t.Errorf("loaded model's Ollama fields = %+v", m)
	}
	if after.Memory.ProcessRSSBytes == 0 || after.Memory.SystemTotalBytes == 0 {
		t.Errorf("memory = %+v", after.Memory)
	}
}

// modelList is GET /v1/models.
type modelList struct {
	Object string       `json:"object"`
	Data   []modelEntry `json:"data"`
}

func TestModels(t *testing.T) {
	reg := registry.New(t.TempDir(), chatTiny().Dir, testmodels.Root()+"/qwen3-f32")
	ts := startServer(t, func(c *serverConfig) { c.opt.Registry = reg })
	var list modelList
	if r := ts.do(t, http.MethodGet, "/v1/models", "", nil); r.Status != 200 || json.Unmarshal(r.Body, &list) != nil {
		t.Fatalf("/v1/models = %d %s", r.Status, r.Body)
	}
	if list.Object != "list" || len(list.Data) != 2 {
		t.Fatalf("/v1/models = %+v, want chat-tiny and qwen3-f32", list)
	}
	tiny := list.Data[0]
	if tiny.ID != "chat-tiny" || !tiny.Default || tiny.Object != "model" || tiny.Tier != "generic" || tiny.ContextLength != 256 ||
		tiny.SizeBytes <= 0 || tiny.Fit == nil || tiny.Fit.Status == "" || tiny.Loaded {
		t.Errorf("chat-tiny entry = %+v", tiny)
	}
	var one modelEntry
	if r := ts.do(t, http.MethodGet, "/v1/models/chat-tiny", "", nil); r.Status != 200 || json.Unmarshal(r.Body, &one) != nil || one.ID != "chat-tiny" {
		t.Errorf("/v1/models/chat-tiny = %d %s", r.Status, r.Body)
	}

	var tags struct {
		Models []tagEntry `json:"models"`
	}
	if r := ts.do(t, http.MethodGet, "/api/tags", "", nil); r.Status != 200 || json.Unmarshal(r.Body, &tags) != nil || len(tags.Models) != 2 {
		t.Fatalf("/api/tags = %d %s", r.Status, r.Body)
	}
	if tags.Models[0].Name != "chat-tiny" || !tags.Models[0].Servable || tags.Models[0].Details.Format != "safetensors" {
		t.Errorf("/api/tags[0] = %+v", tags.Models[0])
	}
}

func TestPull(t *testing.T) {
	var (
		mu    sync.Mutex
		asked []string
	)
	fake := func(ctx context.Context, name string, progress func(registry.Progress)) error {
		mu.Lock()
		asked = append(asked, name)
		mu.Unlock()
		if name == "org/missing" {
			return fmt.Errorf("pull %s: %w: the hub has no such repo", name, registry.ErrNotFound)
		}
		if progress != nil {
			progress(registry.Progress{Repo: name, Status: registry.StatusResolving})
			progress(registry.Progress{Repo: name, Commit: "abc", Status: registry.StatusDownloading, Completed: 5, Total: 10, Files: 2})
			progress(registry.Progress{Repo: name, Commit: "abc", Status: registry.StatusDone, Completed: 10, Total: 10, FilesDone: 2, Files: 2})
		}
		if name == "org/broken" {
			return errors.New("pull org/broken: config.json: checksum mismatch")
		}
		return nil
	}
	ts := startServer(t, func(c *serverConfig) { c.opt.Pull = fake })
	var gold strings.Builder
	for _, body := range []string{
		`{"model":"org/name"}`,
		`{"name":"org/name@v1","stream":false}`,
		`{"model":"org/missing"}`,
		`{"model":"org/broken"}`,
		`{}`,
	} {
		r := ts.post(t, "/api/pull", body)
		fmt.Fprintf(&gold, "=== %s\n%d %s\n%s\n", body, r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	golden(t, "pull.golden", gold.String())
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(asked, " ") != "org/name org/name@v1 org/missing org/broken" {
		t.Errorf("pulled %v", asked)
	}
}

func TestChatPage(t *testing.T) {
	ts := startServer(t)
	r := ts.do(t, http.MethodGet, "/", "", nil)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") || r.Header.Get("Content-Security-Policy") == "" {
		t.Errorf("GET / = %d %v", r.Status, r.Header)
	}
	if r := ts.do(t, http.MethodGet, "/api/nothing", "", nil); r.Status != 404 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("GET /api/nothing = %d %s, want a JSON 404", r.Status, r.Body)
	}
}

// TestShow: Ollama's clients read a model's template, defaults and context
// length from /api/show before they chat.
func TestShow(t *testing.T) {
	reg := registry.New(t.TempDir(), chatTiny().Dir, testmodels.Root()+"/qwen3-f32")
	ts := startServer(t, func(c *serverConfig) { c.opt.Registry = reg })
	var show struct {
		Template     string         `json:"template"`
		Parameters   string         `json:"parameters"`
		ModelInfo    map[string]any `json:"model_info"`
		Capabilities []string       `json:"capabilities"`
		Details      struct {
			Family        string `json:"family"`
			ParameterSize string `json:"parameter_size"`
		} `json:"details"`
		Tier string `json:"tier"`
	}
	for _, body := range []string{`{"model":"chat-tiny"}`, `{"name":"chat-tiny:latest"}`, `{}`} {
		ts.postOK(t, "/api/show", body, &show)
		if !strings.Contains(show.Template, "<|im_start|>") || show.Details.Family != "qwen3" || show.Details.ParameterSize == "" ||
			show.ModelInfo["qwen3.context_length"] != float64(256) || !slices.Contains(show.Capabilities, "completion") || show.Tier != "generic" {
			t.Errorf("POST /api/show %s = %+v", body, show)
		}
	}
	if r := ts.post(t, "/api/show", `{"model":"acme/missing"}`); r.Status != http.StatusNotFound {
		t.Errorf("unknown model: %d %s, want 404", r.Status, r.Body)
	}
	if r := ts.post(t, "/api/show", `{"model":`); r.Status != http.StatusBadRequest {
		t.Errorf("malformed body: %d %s, want 400", r.Status, r.Body)
	}
	// /api/tags gives the parameter count as Ollama does: a string.
	var tags struct {
		Models []struct {
			Details struct {
				ParameterSize string `json:"parameter_size"`
			} `json:"details"`
		} `json:"models"`
	}
	if r := ts.do(t, http.MethodGet, "/api/tags", "", nil); r.Status != 200 || json.Unmarshal(r.Body, &tags) != nil || tags.Models[0].Details.ParameterSize == "" {
		t.Errorf("/api/tags = %d %s", r.Status, r.Body)
	}
}

func TestModelfileParameters(t *testing.T) {
	no, yes := false, true
	for _, tc := range []struct {
		g    config.Generation
		want string
	}{
		{config.Generation{}, ""},
		{config.Generation{DoSample: &no, Temperature: 0.7}, "top_k          1\n"},
		{config.Generation{DoSample: &yes, Temperature: 0.6, TopK: 20, TopP: 0.95, RepetitionPenalty: 1.1},
			"temperature    0.6\ntop_k          20\ntop_p          0.95\nrepeat_penalty 1.1\n"},
	} {
		if got := modelfileParameters(tc.g); got != tc.want {
			t.Errorf("modelfileParameters(%+v) = %q, want %q", tc.g, got, tc.want)
		}
	}
}

// TestBrokenCheckpoint: a model whose files cannot load gets a 400 that
// names the cause, and the server goes on serving the others.
func TestBrokenCheckpoint(t *testing.T) {
	root := t.TempDir()
	copyDir := func(name string) string {
		t.Helper()
		dst := filepath.Join(root, name)
		if err := os.CopyFS(dst, os.DirFS(chatTiny().Dir)); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	noTokenizer := copyDir("no-tokenizer")
	if err := os.Remove(filepath.Join(noTokenizer, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	truncated := copyDir("truncated")
	st, err := os.Stat(filepath.Join(truncated, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(truncated, "model.safetensors"), st.Size()-100); err != nil {
		t.Fatal(err)
	}
	reg := registry.New(t.TempDir(), chatTiny().Dir, noTokenizer, truncated)
	ts := startServer(t, func(c *serverConfig) {
		c.opt.Registry = reg
		c.pool.Resolve = func(name string) (pool.Model, error) {
			rec, err := reg.Resolve(name)
			return pool.Model{ID: rec.Name(), Dir: rec.Dir, Shape: rec.Shape}, err
		}
	})
	for _, tc := range []struct{ dir, want string }{
		{noTokenizer, "tokenizer.json"},
		{truncated, "model.safetensors"},
	} {
		for _, path := range []string{"/v1/chat/completions", "/api/chat"} {
			body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":false}`, tc.dir)
			r := ts.post(t, path, body)
			if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), tc.want) {
				t.Errorf("POST %s for %s = %d %s, want 400 naming %s", path, filepath.Base(tc.dir), r.Status, r.Body, tc.want)
			}
		}
	}
	var out struct {
		Choices []struct{} `json:"choices"`
	}
	ts.postOK(t, "/v1/chat/completions", `{"model":"chat-tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, &out)
	if len(out.Choices) != 1 {
		t.Errorf("chat-tiny after the broken loads: %+v", out)
	}
}
