package web

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"hearth/engine/registry"
	"hearth/internal/testmodels"
)

// tagsOut is GET /api/tags as the tests read it.
type tagsOut struct {
	Models []tagOut `json:"models"`
}

type tagOut struct {
	Name       string  `json:"name"`
	Model      string  `json:"model"`
	ModifiedAt string  `json:"modified_at"`
	Size       int64   `json:"size"`
	Digest     string  `json:"digest"`
	Details    details `json:"details"`
}

func (ts *testServer) tags(t *testing.T) tagsOut {
	t.Helper()
	var out tagsOut
	if r := ts.do(t, http.MethodGet, "/api/tags", "", nil); r.Status != http.StatusOK || json.Unmarshal(r.Body, &out) != nil {
		t.Fatalf("/api/tags = %d %s", r.Status, r.Body)
	}
	return out
}

// names lists the models' names.
func (o tagsOut) names() []string {
	var out []string
	for _, m := range o.Models {
		out = append(out, m.Name)
	}
	return out
}

// TestOllamaModelFields: /api/tags, /api/show and /api/ps describe a model
// with the same Ollama fields and values: family is the model_type (not
// Hearth's "universal"), the digest is never empty and the same in tags
// and ps, and this holds for a model in the registry and for a --model
// directory outside it.
func TestOllamaModelFields(t *testing.T) {
	for _, withRegistry := range []bool{true, false} {
		ts := startServer(t, func(c *serverConfig) {
			if withRegistry {
				c.opt.Registry = registry.New(t.TempDir(), chatTiny().Dir)
			}
		})
		ts.postOK(t, "/api/generate", `{"model":"chat-tiny","prompt":"","keep_alive":"1m"}`, &ollamaOut{}) // load it
		var tag details
		var digest string
		for _, m := range ts.tags(t).Models {
			if m.Name == "chat-tiny" {
				tag, digest = m.Details, m.Digest
				if m.Model != "chat-tiny" || m.Size <= 0 || m.ModifiedAt == "" || m.Digest == "" {
					t.Errorf("registry %v: /api/tags chat-tiny = %+v", withRegistry, m)
				}
			}
		}
		var show struct {
			Details details `json:"details"`
		}
		ts.postOK(t, "/api/show", `{"model":"chat-tiny"}`, &show)
		var ps psResponse
		if r := ts.do(t, http.MethodGet, "/api/ps", "", nil); r.Status != 200 || json.Unmarshal(r.Body, &ps) != nil || len(ps.Models) != 1 {
			t.Fatalf("/api/ps = %d %s", r.Status, r.Body)
		}
		p := ps.Models[0]
		want := details{Format: "safetensors", Family: "qwen3", Families: []string{"qwen3"}, ParameterSize: tag.ParameterSize, QuantizationLevel: tag.QuantizationLevel}
		if tag.ParameterSize == "" || tag.QuantizationLevel == "" {
			t.Errorf("registry %v: tags details %+v lack the size or quantization", withRegistry, tag)
		}
		for where, got := range map[string]details{"tags": tag, "show": show.Details, "ps": p.Details} {
			if !reflect.DeepEqual(got, want) {
				t.Errorf("registry %v: /api/%s details = %+v, want %+v", withRegistry, where, got, want)
			}
		}
		if p.Name != "chat-tiny" || p.Model != "chat-tiny" || p.Digest != digest || p.Size <= 0 || p.ExpiresAt.IsZero() {
			t.Errorf("registry %v: /api/ps model = %+v, want digest %q", withRegistry, p, digest)
		}
	}
}

// TestOllamaCopyDelete: /api/copy makes an alias that works on every route
// and is listed beside its model; /api/delete removes an alias alone, or a
// downloaded repo (unloading it first) with its aliases; the built-in
// model, the server's own model and unknown names are refused.
func TestOllamaCopyDelete(t *testing.T) {
	cache := t.TempDir()
	hub := chatTinyHub(t, "acme/tiny-chat")
	if err := registry.Pull(context.Background(), registry.PullOptions{Endpoint: hub.URL, CacheDir: cache, Repo: hub.Repo}, nil); err != nil {
		t.Fatal(err)
	}
	aliases := filepath.Join(t.TempDir(), "aliases.json")
	reg := registry.New(cache).WithBuiltin(registry.Builtin{ID: "hearth/starter", Dir: filepath.Join(testmodels.Root(), "qwen3-f32")}).WithAliases(aliases)
	ts := startServer(t, func(c *serverConfig) {
		c.opt.Registry = reg
		c.pool.Resolve = cacheResolver(reg)
	})
	status := func(method, path, body string, want int) {
		t.Helper()
		if r := ts.do(t, method, path, body, nil); r.Status != want {
			t.Errorf("%s %s %s = %d %s, want %d", method, path, body, r.Status, r.Body, want)
		}
	}

	status("POST", "/api/copy", `{"source":"acme/tiny-chat","destination":"my-tiny:latest"}`, 200)
	status("POST", "/api/copy", `{"source":"tiny-chat","destination":"team/tiny:v2"}`, 200)
	tags := ts.tags(t)
	var repoDigest string
	for _, m := range tags.Models {
		if m.Name == "acme/tiny-chat" {
			repoDigest = m.Digest
		}
	}
	for _, name := range []string{"my-tiny", "team/tiny:v2"} {
		i := slices.IndexFunc(tags.Models, func(m tagOut) bool { return m.Name == name })
		if i < 0 {
			t.Fatalf("/api/tags after copying = %v, want %s", tags.names(), name)
		}
		if m := tags.Models[i]; m.Digest != repoDigest || m.Digest == "" || m.Details.ParentModel != "acme/tiny-chat" || m.Details.Family != "qwen3" {
			t.Errorf("/api/tags %s = %+v, want acme/tiny-chat's digest %q and parent", name, m, repoDigest)
		}
	}
	// The alias works wherever a model is named, and answers as its model.
	var chat chatOut
	ts.postOK(t, "/v1/chat/completions", `{"model":"my-tiny","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`, &chat)
	if chat.Model != "acme/tiny-chat" {
		t.Errorf("chat with the alias answered as %q, want acme/tiny-chat", chat.Model)
	}
	for _, rt := range []struct{ method, path, body string }{
		{"GET", "/v1/models/my-tiny", ""},
		{"GET", "/v1/models/team%2Ftiny:v2", ""},
		{"POST", "/api/show", `{"model":"my-tiny:latest"}`},
		{"POST", "/api/tokenize", `{"model":"team/tiny:v2","text":"hi"}`},
		{"POST", "/v1/messages/count_tokens", `{"model":"my-tiny","messages":[{"role":"user","content":"hi"}]}`},
		{"POST", "/v1/responses", `{"model":"my-tiny","input":"hi","max_output_tokens":2}`},
		{"POST", "/api/chat", `{"model":"team/tiny:v2","messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"num_predict":2}}`},
	} {
		status(rt.method, rt.path, rt.body, 200)
	}
	if models := ts.psModels(t); len(models) != 1 || models[0]["name"] != "acme/tiny-chat" {
		t.Errorf("/api/ps = %v, want acme/tiny-chat loaded once", models)
	}

	// Refused copies.
	status("POST", "/api/copy", `{"source":"my-tiny","destination":"acme/tiny-chat"}`, 400) // a model's own name
	status("POST", "/api/copy", `{"source":"my-tiny","destination":"chat-tiny"}`, 400)      // the server's model
	status("POST", "/api/copy", `{"source":"my-tiny","destination":"../x"}`, 400)
	status("POST", "/api/copy", `{"source":"nope/nope","destination":"x"}`, 404)

	// Deleting an alias leaves its model.
	status("DELETE", "/api/delete", `{"name":"my-tiny"}`, 200)
	status("POST", "/v1/chat/completions", `{"model":"my-tiny","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`, 404)
	if models := ts.psModels(t); len(models) != 1 {
		t.Errorf("/api/ps after deleting the alias = %v, want acme/tiny-chat still loaded", models)
	}

	// Refused deletes.
	status("DELETE", "/api/delete", `{"model":"hearth/starter"}`, 400)
	status("DELETE", "/api/delete", `{"model":"hearth/starter:latest"}`, 400)
	status("DELETE", "/api/delete", `{"model":"chat-tiny"}`, 400)
	status("DELETE", "/api/delete", `{"model":"acme/tiny-chat@main"}`, 400)
	status("DELETE", "/api/delete", `{"model":"nope/nope"}`, 404)

	// Deleting the repo unloads it and takes its other alias along.
	status("DELETE", "/api/delete", `{"model":"acme/tiny-chat"}`, 200)
	if models := ts.psModels(t); len(models) != 0 {
		t.Errorf("/api/ps after deleting the repo = %v, want nothing loaded", models)
	}
	if _, err := os.Stat(registry.RepoDir(cache, "acme/tiny-chat")); !os.IsNotExist(err) {
		t.Errorf("the repo is still in the cache: %v", err)
	}
	if names := ts.tags(t).names(); slices.Contains(names, "acme/tiny-chat") || slices.Contains(names, "team/tiny:v2") {
		t.Errorf("/api/tags after deleting the repo = %v", names)
	}
	status("POST", "/api/chat", `{"model":"team/tiny:v2","messages":[{"role":"user","content":"hi"}],"stream":false}`, 404)
	status("DELETE", "/api/delete", `{"model":"acme/tiny-chat"}`, 404)
}
