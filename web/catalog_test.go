package web

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"hearth/engine/registry"
)

// catalogOf is GET /api/catalog, decoded.
func (ts *testServer) catalogOf(t *testing.T) []catalogModel {
	t.Helper()
	r := ts.do(t, http.MethodGet, "/api/catalog", "", nil)
	var body struct {
		Updated string         `json:"updated"`
		Models  []catalogModel `json:"models"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &body) != nil || body.Updated == "" {
		t.Fatalf("GET /api/catalog = %d %.500s", r.Status, r.Body)
	}
	return body.Models
}

// TestCatalogEndpoint: GET /api/catalog over a real server lists the
// catalog best fit first with one model recommended; a catalog name
// pulls through POST /api/pull (from a stand-in hub serving chat-tiny
// under the catalog's repo), is then listed as downloaded and answers
// chats by that name.
func TestCatalogEndpoint(t *testing.T) {
	const repo = "mlx-community/Qwen3-0.6B-4bit"
	cache := t.TempDir()
	hub := chatTinyHub(t, repo)
	reg := registry.New(cache).WithCatalog(registry.BuiltinCatalog())
	ts := startServer(t, func(c *serverConfig) {
		c.opt.Registry = reg
		c.opt.Pull = pullFrom(hub, cache)
		c.pool.Resolve = cacheResolver(reg)
	})

	// The wire names the web chat's model panel reads.
	r := ts.do(t, http.MethodGet, "/api/catalog", "", nil)
	var raw struct {
		Models []map[string]any `json:"models"`
	}
	if err := json.Unmarshal(r.Body, &raw); err != nil || len(raw.Models) == 0 {
		t.Fatalf("GET /api/catalog = %d %.300s", r.Status, r.Body)
	}
	for _, k := range []string{"name", "names", "repo", "parameters", "size_bytes", "estimated", "quantization", "context_length",
		"capabilities", "tier", "fit", "downloaded", "recommended"} {
		if _, ok := raw.Models[0][k]; !ok {
			t.Errorf("a catalog model has no %q: %v", k, raw.Models[0])
		}
	}
	fitKeys := []string{}
	for k := range raw.Models[0]["fit"].(map[string]any) {
		fitKeys = append(fitKeys, k)
	}
	slices.Sort(fitKeys)
	if want := "available_bytes context_tokens max_context_tokens need_bytes status"; strings.Join(fitKeys, " ") != want {
		t.Errorf("fit has %v, want %s", fitKeys, want)
	}

	models := ts.catalogOf(t)
	if len(models) != len(registry.BuiltinCatalog().Models) {
		t.Errorf("%d models, the catalog has %d", len(models), len(registry.BuiltinCatalog().Models))
	}
	rank := map[string]int{"fits": 0, "tight": 1, "won't fit": 2}
	recommended := 0
	for i, m := range models {
		if m.Downloaded {
			t.Errorf("%s is downloaded before any pull", m.Name)
		}
		if i > 0 && rank[string(models[i-1].Fit.Status)] > rank[string(m.Fit.Status)] {
			t.Errorf("%s (%s) is listed after %s (%s)", m.Name, m.Fit.Status, models[i-1].Name, models[i-1].Fit.Status)
		}
		if m.Recommended {
			recommended++
			// The best fit there is, and the first of it within a
			// first pull's size when one is (registry.Offers).
			if m.Fit.Status != models[0].Fit.Status || m.Fit.Status == "won't fit" {
				t.Errorf("recommended: %s at %d (%s)", m.Name, i, m.Fit.Status)
			}
			for _, p := range models[:i] {
				if p.Fit.Status == m.Fit.Status && (p.SizeBytes <= registry.FirstPullBytes || m.SizeBytes > registry.FirstPullBytes) {
					t.Errorf("recommended %s, but %s fits as well and comes first", m.Name, p.Name)
				}
			}
		}
	}
	if models[0].Fit.Status != "won't fit" && recommended != 1 {
		t.Errorf("%d models recommended, want 1", recommended)
	}

	r = ts.post(t, "/api/pull", `{"model":"qwen3:0.6b","stream":false}`)
	if r.Status != http.StatusOK {
		t.Fatalf("pull qwen3:0.6b = %d %s", r.Status, r.Body)
	}
	for _, m := range ts.catalogOf(t) {
		if m.Downloaded != (m.Repo == repo) {
			t.Errorf("after the pull, %s downloaded = %v", m.Name, m.Downloaded)
		}
	}
	for _, name := range []string{"qwen3:0.6b", "qwen3:0.6b:latest"} {
		body := `{"model":"` + name + `","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
		if r := ts.post(t, "/v1/chat/completions", body); r.Status != http.StatusOK {
			t.Errorf("chat with %s = %d %s", name, r.Status, r.Body)
		}
	}
	// A catalog name not pulled yet says what to pull.
	r = ts.post(t, "/v1/chat/completions", `{"model":"qwen3:8b","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	if r.Status != http.StatusNotFound || !strings.Contains(string(r.Body), "is not downloaded yet; run hearth pull qwen3:8b") {
		t.Errorf("chat with a model not pulled = %d %s", r.Status, r.Body)
	}
}

// TestPullCatalogNames: POST /api/pull takes catalog names with Ollama's
// tags, answers a name the catalog lacks with 404 and "did you mean", and
// an unreachable hub with 502 and one sentence saying so.
func TestPullCatalogNames(t *testing.T) {
	var asked []string
	fake := func(ctx context.Context, name string, progress func(registry.Progress)) error {
		asked = append(asked, name)
		return nil
	}
	ts := startServer(t, func(c *serverConfig) { c.opt.Pull = fake })
	for _, name := range []string{"llama3.2", "llama3.2:latest", "llama3.2:1b", "qwen3:8b@0123abc"} {
		if r := ts.post(t, "/api/pull", `{"model":"`+name+`","stream":false}`); r.Status != http.StatusOK {
			t.Errorf("pull %s = %d %s", name, r.Status, r.Body)
		}
	}
	want := []string{"mlx-community/Llama-3.2-3B-Instruct-4bit", "mlx-community/Llama-3.2-3B-Instruct-4bit",
		"mlx-community/Llama-3.2-1B-Instruct-4bit", "mlx-community/Qwen3-8B-4bit@0123abc"}
	if !slices.Equal(asked, want) {
		t.Errorf("pulled %v, want %v", asked, want)
	}
	r := ts.post(t, "/api/pull", `{"model":"lama3.2"}`)
	if r.Status != http.StatusNotFound || !strings.Contains(string(r.Body), `is not in Hearth's model catalog (did you mean llama3.2`) {
		t.Errorf("pull lama3.2 = %d %s", r.Status, r.Body)
	}
	if len(asked) != len(want) {
		t.Errorf("an unknown name reached the hub: %v", asked)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	offline := startServer(t, func(c *serverConfig) {
		c.opt.Pull = func(ctx context.Context, name string, progress func(registry.Progress)) error {
			return registry.Pull(ctx, registry.PullOptions{Endpoint: "http://" + closed, CacheDir: t.TempDir(), Repo: name}, progress)
		}
	})
	for _, stream := range []string{"false", "true"} {
		r := offline.post(t, "/api/pull", `{"model":"llama3.2","stream":`+stream+`}`)
		var body nativeError
		if r.Status != http.StatusBadGateway || json.Unmarshal(r.Body, &body) != nil ||
			!strings.HasPrefix(body.Error, "pull mlx-community/Llama-3.2-3B-Instruct-4bit: cannot reach 127.0.0.1 (offline?): ") {
			t.Errorf("pull with the hub offline (stream %s) = %d %s", stream, r.Status, r.Body)
		}
	}
}
