package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"hearth/engine/pool"
	"hearth/engine/registry"
)

// psModels reads /api/ps's models as raw objects, so a test sees which
// fields are present.
func (ts *testServer) psModels(t *testing.T) []map[string]any {
	t.Helper()
	r := ts.do(t, http.MethodGet, "/api/ps", "", nil)
	var out struct {
		Models []map[string]any `json:"models"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &out) != nil {
		t.Fatalf("/api/ps = %d %s", r.Status, r.Body)
	}
	return out.Models
}

// withTwoModels also serves chat-tiny under the name "other".
func withTwoModels(c *serverConfig) {
	c.pool.Resolve = func(name string) (pool.Model, error) {
		if name == "other" {
			return pool.Model{ID: "other", Dir: chatTiny().Dir}, nil
		}
		return pool.Model{}, registry.ErrNotFound
	}
}

func TestKeepAliveOverHTTP(t *testing.T) {
	ts := startServer(t, withTwoModels)
	// load is Ollama's load request: a generate with no prompt.
	load := func(model, keepAlive string) response {
		body := `{"model":"` + model + `"`
		if keepAlive != "" {
			body += `,"keep_alive":` + keepAlive
		}
		return ts.do(t, http.MethodPost, "/api/generate", body+"}", nil)
	}

	// Two models stay resident side by side; keep_alive sets expires_at.
	before := time.Now()
	if r := load("chat-tiny", `"1h"`); r.Status != http.StatusOK {
		t.Fatalf("load = %d %s", r.Status, r.Body)
	}
	if r := load("other", `-1`); r.Status != http.StatusOK {
		t.Fatalf("load = %d %s", r.Status, r.Body)
	}
	models := ts.psModels(t)
	// The most recently used first.
	if len(models) != 2 || models[0]["id"] != "other" || models[1]["id"] != "chat-tiny" {
		t.Fatalf("/api/ps models = %v, want other and chat-tiny", models)
	}
	exp, err := time.Parse(time.RFC3339Nano, models[1]["expires_at"].(string))
	if err != nil || exp.Before(before.Add(time.Hour)) || exp.After(time.Now().Add(time.Hour)) {
		t.Errorf("chat-tiny expires_at = %v (%v), want an hour after the request", models[1]["expires_at"], err)
	}
	if v, ok := models[0]["expires_at"]; ok {
		t.Errorf("other, kept forever, has expires_at %v", v)
	}

	// keep_alive 0 on a load request unloads the model.
	if r := load("other", `0`); r.Status != http.StatusOK {
		t.Fatalf("unload = %d %s", r.Status, r.Body)
	}
	if models := ts.psModels(t); len(models) != 1 || models[0]["id"] != "chat-tiny" {
		t.Errorf("/api/ps after keep_alive 0 on other = %v, want only chat-tiny", models)
	}

	// keep_alive 0 on a request to a loaded model unloads it afterwards.
	// (The never-load-first unload of /api/chat and /api/generate is
	// TestOllamaLoadUnload's and engine/pool's TestUnload's.)
	if r := ts.do(t, http.MethodPost, "/api/generate", `{"model":"chat-tiny","prompt":"hi","stream":false,"options":{"num_predict":1},"keep_alive":0}`, nil); r.Status != http.StatusOK {
		t.Fatalf("generate = %d %s", r.Status, r.Body)
	}
	if models := ts.psModels(t); len(models) != 0 {
		t.Errorf("/api/ps after the unload request = %v, want nothing loaded", models)
	}

	// A short keep-alive runs out on its own.
	if r := load("chat-tiny", `"10ms"`); r.Status != http.StatusOK {
		t.Fatalf("load = %d %s", r.Status, r.Body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(ts.psModels(t)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("chat-tiny still loaded after its 10ms keep-alive: %v", ts.psModels(t))
		}
		time.Sleep(5 * time.Millisecond)
	}

	// Past what a duration holds (292 years) is a 400 whether it is
	// written as a number or as a string; negative is forever, however
	// large.
	for _, bad := range []string{`"soon"`, `{}`, `true`, `1e999`, `1e30`, `"1e30"`, `9223372037`, `"3000000h"`} {
		r := load("chat-tiny", bad)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "keep_alive") {
			t.Errorf("keep_alive %s: %d %s, want 400 naming keep_alive", bad, r.Status, r.Body)
		}
	}
	for _, forever := range []string{`-1e30`, `"-1e30"`, `-1`} {
		if r := load("chat-tiny", forever); r.Status != http.StatusOK {
			t.Errorf("keep_alive %s: %d %s, want 200 (kept loaded)", forever, r.Status, r.Body)
		} else if models := ts.psModels(t); len(models) != 1 || models[0]["expires_at"] != nil {
			t.Errorf("keep_alive %s: /api/ps = %v, want chat-tiny with no expires_at", forever, models)
		}
	}
}

// TestServerKeepAlive checks that the OpenAI endpoints use the server's
// keep-alive: 0 there unloads after every request.
func TestServerKeepAlive(t *testing.T) {
	zero := time.Duration(0)
	ts := startServer(t, func(c *serverConfig) { c.pool.KeepAlive = &zero })
	var out chatOut
	ts.postOK(t, "/v1/chat/completions", chatBody("hi", 2, ""), &out)
	if models := ts.psModels(t); len(models) != 0 {
		t.Errorf("/api/ps = %v, want nothing loaded", models)
	}
}
