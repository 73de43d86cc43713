package web

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/pool"
	"hearth/engine/registry"
	"hearth/engine/registry/registrytest"
)

// chatTinyHub is a stand-in hub serving chat-tiny as repo.
func chatTinyHub(t *testing.T, repo string) *registrytest.Hub {
	t.Helper()
	h := registrytest.NewHub(t, repo)
	entries, err := os.ReadDir(chatTiny().Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(chatTiny().Dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		h.Files[e.Name()] = registrytest.File{Data: b, LFS: strings.HasSuffix(e.Name(), ".safetensors")}
	}
	return h
}

// pullFrom is the server's PullFunc against hub, as app wires it.
func pullFrom(hub *registrytest.Hub, cache string) PullFunc {
	return func(ctx context.Context, name string, progress func(registry.Progress)) error {
		repo, rev, _ := strings.Cut(name, "@")
		return registry.Pull(ctx, registry.PullOptions{Endpoint: hub.URL, CacheDir: cache, Repo: repo, Revision: rev}, progress)
	}
}

// cacheResolver is the pool's resolver over reg, as app wires it: names
// from requests resolve in the cache and the built-in entries only.
func cacheResolver(reg *registry.Registry) func(string) (pool.Model, error) {
	return func(name string) (pool.Model, error) {
		rec, err := reg.ResolveName(name)
		if err != nil {
			return pool.Model{}, err
		}
		return pool.Model{ID: rec.Name(), Dir: rec.Dir, Shape: rec.Shape}, nil
	}
}

// TestModelNamesArePathFree: over HTTP a model name is a cache name. A
// path-like name, whether it names a model directory, a file, a directory
// or nothing, gets on every route that takes a model the same 404 as any
// unknown name, with the name as the only difference, so the answers tell
// nothing about the server's disk. The default model, served from a
// directory outside the cache (serve --model DIR), answers to the id the
// server lists for it, and a cached model to its repo id.
func TestModelNamesArePathFree(t *testing.T) {
	cache := t.TempDir()
	hub := chatTinyHub(t, "acme/tiny-chat")
	if err := registry.Pull(context.Background(), registry.PullOptions{Endpoint: hub.URL, CacheDir: cache, Repo: hub.Repo}, nil); err != nil {
		t.Fatal(err)
	}
	reg := registry.New(cache)
	ts := startServer(t, func(c *serverConfig) {
		c.opt.Registry = reg
		c.pool.Resolve = cacheResolver(reg)
	})
	file := filepath.Join(t.TempDir(), ".bashrc")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	routes := []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":%s,"messages":[{"role":"user","content":"hi"}],"max_tokens":1}`},
		{"/v1/completions", `{"model":%s,"prompt":"hi","max_tokens":1}`},
		{"/v1/messages", `{"model":%s,"max_tokens":1,"messages":[{"role":"user","content":"hi"}]}`},
		{"/api/chat", `{"model":%s,"messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"num_predict":1}}`},
		{"/api/generate", `{"model":%s,"prompt":"hi","stream":false,"options":{"num_predict":1}}`},
		{"/api/generate", `{"model":%s,"keep_alive":0}`}, // an unload
		{"/api/show", `{"model":%s}`},
		{"/api/tokenize", `{"model":%s,"text":"hi"}`},
	}
	body := func(format, name string) string {
		b, _ := json.Marshal(name)
		return strings.Replace(format, "%s", string(b), 1)
	}
	for _, path := range []string{"/v1/models/acme/tiny-chat", "/v1/models/acme%2Ftiny-chat", "/v1/models/acme%2ftiny-chat"} {
		var m modelEntry
		if r := ts.do(t, http.MethodGet, path, "", nil); r.Status != http.StatusOK || json.Unmarshal(r.Body, &m) != nil || m.ID != "acme/tiny-chat" {
			t.Errorf("GET %s = %d %.300s, want acme/tiny-chat", path, r.Status, r.Body)
		}
	}
	for _, rt := range routes {
		for _, name := range []string{"chat-tiny", "chat-tiny:latest", "acme/tiny-chat", "tiny-chat"} {
			if r := ts.post(t, rt.path, body(rt.body, name)); r.Status != http.StatusOK {
				t.Errorf("POST %s with model %q = %d %s, want 200", rt.path, name, r.Status, r.Body)
			}
		}
	}

	names := []string{
		"no-such/model", "~/", "~", "~/../etc", "~/.bashrc", "../../etc/passwd", "/etc/passwd", "/etc", "/", ".", "..", "./",
		chatTiny().Dir, // a model directory outside the cache
		filepath.Join(chatTiny().Dir, "config.json"), // a file
		filepath.Join(chatTiny().Dir, "..", "chat-tiny"),
		file, filepath.Dir(file),
		"testdata", "testdata/pull.golden", "./testdata", // relative to the server's working directory
		filepath.Join(cache, "models--acme--tiny-chat"), // the cache itself, by path
		strings.Repeat("x", 100_000),
	}
	for _, rt := range routes {
		var first string
		for _, name := range names {
			r := ts.post(t, rt.path, body(rt.body, name))
			if r.Status != http.StatusNotFound {
				t.Errorf("POST %s with model %.40q = %d %.300s, want 404", rt.path, name, r.Status, r.Body)
				continue
			}
			if len(r.Body) > 1000 {
				t.Errorf("POST %s with model %.40q: a %d-byte answer", rt.path, name, len(r.Body))
			}
			// The name is the only difference between two answers.
			q, _ := json.Marshal(registry.QuoteName(name))
			shape := strings.Replace(string(r.Body), string(q[1:len(q)-1]), "NAME", 1)
			if first == "" {
				first = shape
				if !strings.Contains(shape, `NAME is not in the Hugging Face cache`) {
					t.Errorf("POST %s: unknown name answered %s", rt.path, shape)
				}
			} else if shape != first {
				t.Errorf("POST %s with model %.40q answered\n%.300s\nwhere every unknown name gets\n%s", rt.path, name, shape, first)
			}
		}
	}
}

// TestPullStatuses: /api/pull answers in the right class: 400 for a name
// that cannot exist (echoed truncated), 404 for a repo the hub lacks, 403
// for a refusal, 502 with the hub's reason for a hub that fails or answers
// what a pull cannot use, streamed or not. A corrupt download is listed
// afterwards as one, not as an interrupted download.
func TestPullStatuses(t *testing.T) {
	const repo = "acme/tiny-chat"
	sibling := func(info map[string]any, name string) map[string]any {
		for _, s := range info["siblings"].([]any) {
			if m := s.(map[string]any); m["rfilename"] == name {
				return m
			}
		}
		t.Errorf("no sibling %s", name)
		return map[string]any{}
	}
	long := strings.Repeat("a", 100_000)
	tests := []struct {
		name       string
		model      string
		fault      func(h *registrytest.Hub)
		status     int // also when streamed
		streamedOK bool
		contains   string
	}{
		{"success", repo, nil, 200, true, `{"status":"success"}`},
		{"invalid repo id", "../../etc/passwd", nil, 400, false, `repo id \"../../etc/passwd\" is not of the form org/name`},
		{"long repo id", long, nil, 400, false, `aaa\"… (100000 bytes) is not of the form org/name`},
		{"long repo id in the old field", "", nil, 400, false, `… (100000 bytes)`},
		{"bad revision", repo + "@../x", nil, 400, false, `revision \"../x\" is not a branch, tag or commit`},
		{"unknown repo", "nobody/nothing", nil, 404, false, "repository nobody/nothing is not on the hub"},
		{"unknown revision", repo + "@v9", nil, 404, false, "has no revision v9"},
		{"gated", repo, func(h *registrytest.Hub) { h.Token = "hf_secret" }, 403, false, "is gated"},
		{"bad commit", repo, func(h *registrytest.Hub) {
			h.EditInfo(func(info map[string]any) { info["sha"] = "zz" })
		}, 502, false, `sha \"zz\" is not a 40-digit commit hash`},
		{"bad file name", repo, func(h *registrytest.Hub) {
			h.EditInfo(func(info map[string]any) {
				info["siblings"] = append(info["siblings"].([]any), map[string]any{"rfilename": "/etc/passwd"})
			})
		}, 502, false, `file name \"/etc/passwd\" is not a relative path inside the repo`},
		{"bad size", repo, func(h *registrytest.Hub) {
			h.EditInfo(func(info map[string]any) { sibling(info, "config.json")["size"] = -7 })
		}, 502, false, `has blob id`},
		{"bad commit in the headers", repo, func(h *registrytest.Hub) {
			h.Blobs = false
			h.Header("config.json", "X-Repo-Commit", strings.Repeat("d", 40))
		}, 502, false, "the hub served commit"},
		{"hub down", repo, func(h *registrytest.Hub) { h.Fail(http.StatusInternalServerError, "database unavailable") },
			502, false, "the hub answered 500 Internal Server Error for main: database unavailable"},
		{"sha256 mismatch", repo, func(h *registrytest.Hub) { h.Corrupt("model.safetensors", true) },
			502, true, "model.safetensors: corrupt download: sha256 is"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			name := tt.name
			if stream {
				name += ", streamed"
			}
			t.Run(name, func(t *testing.T) {
				hub := chatTinyHub(t, repo)
				if tt.fault != nil {
					tt.fault(hub)
				}
				cache := t.TempDir()
				ts := startServer(t, func(c *serverConfig) {
					c.opt.Pull = pullFrom(hub, cache)
					c.opt.Registry = registry.New(cache)
				})
				field := "model"
				model := tt.model
				if model == "" {
					field, model = "name", long
				}
				req, _ := json.Marshal(map[string]any{field: model, "stream": stream})
				r := ts.post(t, "/api/pull", string(req))
				status := tt.status
				if stream && tt.streamedOK {
					status = 200 // the download had begun: the error is the stream's last line
				}
				if r.Status != status || !strings.Contains(string(r.Body), tt.contains) || len(r.Body) > 2000 {
					t.Errorf("POST /api/pull = %d %.600s, want %d containing %s", r.Status, r.Body, status, tt.contains)
				}
				if stream && tt.streamedOK && tt.status != 200 {
					lines := strings.Split(strings.TrimSpace(string(r.Body)), "\n")
					if last := lines[len(lines)-1]; !strings.HasPrefix(last, `{"error":`) {
						t.Errorf("the stream ends with %s, want the error", last)
					}
				}
				if tt.name != "sha256 mismatch" {
					return
				}
				var tags struct {
					Models []tagEntry `json:"models"`
				}
				if r := ts.do(t, http.MethodGet, "/api/tags", "", nil); r.Status != 200 || json.Unmarshal(r.Body, &tags) != nil {
					t.Fatalf("/api/tags = %d %s", r.Status, r.Body)
				}
				for _, m := range tags.Models {
					if m.Name == repo && (m.Servable || !strings.Contains(m.Reason, "failed verification") || !strings.Contains(m.Reason, "hearth pull "+repo+" again")) {
						t.Errorf("after a corrupt pull, /api/tags lists %+v", m)
					}
				}
				if inc, _ := filepath.Glob(filepath.Join(registry.RepoDir(cache, repo), "blobs", "*.incomplete")); len(inc) > 0 {
					t.Errorf("the failed pull left %v", inc)
				}
			})
		}
	}
}
