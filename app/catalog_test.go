package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"hearth/engine/registry"
)

// TestPullCatalogName: `hearth pull qwen3:0.6b` pulls the catalog's repo
// for that name (here from a stand-in hub serving chat-tiny under it), the
// model then runs by the same name, and `hearth ls --available` marks it
// downloaded.
func TestPullCatalogName(t *testing.T) {
	const repo = "mlx-community/Qwen3-0.6B-4bit"
	hub := newTestHub(t, repo, chatTinyDir)
	env := mapEnv{"HF_HOME": t.TempDir(), "HF_ENDPOINT": hub.URL, "XDG_CACHE_HOME": t.TempDir()}

	c, out, _ := newCLI(t, "", env)
	if err := c.run([]string{"pull", "QWEN3:0.6B"}); err != nil {
		t.Fatal(err)
	}
	if want := repo + ": generic tier (universal)"; !strings.HasPrefix(out.String(), want) || !strings.HasSuffix(out.String(), "; run: hearth run QWEN3:0.6B\n") {
		t.Errorf("pull said %q, want %q… run: hearth run QWEN3:0.6B", out.String(), want)
	}

	c, out, _ = newCLI(t, "", env)
	if err := c.run([]string{"run", "--threads", "1", "--max-tokens", "4", "qwen3:0.6b", "hi"}); err != nil || out.String() == "" {
		t.Errorf("run qwen3:0.6b: %v, %q", err, out.String())
	}

	c, out, _ = newCLI(t, "", env)
	if err := c.run([]string{"ls", "--available"}); err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^qwen3:0\.6b\s+` + regexp.QuoteMeta(repo) + `\s.*\bdownloaded\b`)
	if !row.MatchString(out.String()) || strings.Count(out.String(), " downloaded") != 1 {
		t.Errorf("ls --available does not mark qwen3:0.6b (alone) downloaded:\n%s", out.String())
	}
}

// TestPullUnknownName: a short name the catalog lacks never reaches the
// hub, and the error suggests catalog names.
func TestPullUnknownName(t *testing.T) {
	asked := false
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { asked = true }))
	defer hub.Close()
	tests := []struct{ name, contains string }{
		{"lama3.2", `"lama3.2" is not in Hearth's model catalog (did you mean llama3.2`},
		{"gemma3:2b", "did you mean gemma3:27b, gemma3:12b, gemma3:4b, gemma3:1b"},
		{"Qwen3-0.6B", "qwen3:0.6b"},
	}
	for _, tt := range tests {
		c, _, _ := newCLI(t, "", mapEnv{"HF_ENDPOINT": hub.URL})
		err := c.run([]string{"pull", tt.name})
		if !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), tt.contains) {
			t.Errorf("pull %s: %v, want not found containing %q", tt.name, err, tt.contains)
		}
	}
	if asked {
		t.Errorf("an unknown short name was sent to the hub")
	}
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestPullOffline: with the hub out of reach, pull fails with one sentence
// that says so, on a line of its own after the progress line.
func TestPullOffline(t *testing.T) {
	c, _, errs := newCLI(t, "", mapEnv{"HF_ENDPOINT": "http://" + closedPort(t)})
	err := c.run([]string{"pull", "llama3.2"})
	want := "pull mlx-community/Llama-3.2-3B-Instruct-4bit: cannot reach 127.0.0.1 (offline?): dial tcp "
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "reach the hub") {
		t.Fatalf("pull offline: %v, want %q…", err, want)
	}
	// The progress line ("pulling …: resolving main", redrawn with \r) is
	// ended, so main's "hearth: <error>" starts a line.
	if e := errs.String(); !strings.Contains(e, "resolving main") || !strings.HasSuffix(e, "\n") {
		t.Errorf("stderr %q does not end its progress line", e)
	}
}

// TestLsAvailable: the catalog with this machine's fit verdicts, best fit
// first, one model recommended when any fits.
func TestLsAvailable(t *testing.T) {
	c, out, _ := newCLI(t, "", nil)
	if err := c.run([]string{"ls", "--available"}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !regexp.MustCompile(`^NAME\s+REPO\s+TIER\s+SIZE\s+PARAMS\s+QUANT\s+CONTEXT\s+FIT\s+NOTE$`).MatchString(lines[0]) {
		t.Fatalf("header %q", lines[0])
	}
	n := len(registry.BuiltinCatalog().Models)
	if len(lines) != n+3 || !strings.Contains(lines[len(lines)-1], "sizes with ~ are estimates until pulled. Pull one: hearth pull NAME") {
		t.Fatalf("%d lines for %d models:\n%s", len(lines), n, out.String())
	}
	rank := map[string]int{"fits": 0, "tight": 1, "won't fit": 2}
	last, recommended, fits := 0, 0, false
	for i, l := range lines[1 : n+1] {
		m := regexp.MustCompile(`\s(~?[\d.]+ [kMG]B)\s.*\s(fits|tight|won't fit)\b`).FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("row %q has no size and fit", l)
		}
		r := rank[m[2]]
		if r < last {
			t.Errorf("row %d (%s) ranks after a worse fit", i+1, l)
		}
		last, fits = r, fits || r < 2
		if strings.Contains(l, "recommended") {
			recommended++
			// The best fit listed (registry.Offers picks which of it).
			if r != rank[regexp.MustCompile(`(fits|tight|won't fit)`).FindString(lines[1])] {
				t.Errorf("recommended on row %d: %s", i+1, l)
			}
		}
	}
	if fits && recommended != 1 {
		t.Errorf("%d rows recommended, want 1:\n%s", recommended, out.String())
	}
}

// TestPullCatalog: `hearth pull --catalog` fetches the catalog at
// HEARTH_CATALOG_URL into Hearth's cache, and later commands use it.
func TestPullCatalog(t *testing.T) {
	newer := `{"version": 1, "updated": "2999-01-01", "models": [
  {"names": ["tiny:1m"], "repo": "acme/tiny-chat", "parameters": 140000, "size_bytes": 560000, "estimated": true, "quantization": "f32",
    "config": {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 512, "max_position_embeddings": 256}}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, newer) }))
	defer srv.Close()
	env := mapEnv{"HEARTH_CATALOG_URL": srv.URL + "/catalog.json", "XDG_CACHE_HOME": t.TempDir(), "HF_HOME": t.TempDir()}

	c, out, _ := newCLI(t, "", env)
	if err := c.run([]string{"pull", "--catalog"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "model catalog of 2999-01-01 (1 models) from "+srv.URL) {
		t.Errorf("pull --catalog said %q", out.String())
	}
	c, out, _ = newCLI(t, "", env)
	if err := c.run([]string{"ls", "--available"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "tiny:1m") || strings.Contains(out.String(), "llama3.2") {
		t.Errorf("ls --available after the update:\n%s", out.String())
	}
	// A hub that cannot be reached leaves the catalog as it was.
	env["HEARTH_CATALOG_URL"] = "http://" + closedPort(t) + "/catalog.json"
	c, _, _ = newCLI(t, "", env)
	if err := c.run([]string{"pull", "--catalog"}); err == nil || !strings.Contains(err.Error(), "cannot reach 127.0.0.1 (offline?)") {
		t.Errorf("pull --catalog offline: %v", err)
	}
	if _, err := os.Stat(filepath.Join(env["XDG_CACHE_HOME"], "hearth", "catalog.json")); err != nil {
		t.Errorf("the fetched catalog is gone: %v", err)
	}
}

// TestRunSamplesLikeServer: hearth run takes the sampling defaults the
// server takes (the model's generation_config.json, then the API's), so
// with the same seed and prompt it answers what /v1/chat/completions
// answers, and a model that asks for greedy decoding gets it.
func TestRunSamplesLikeServer(t *testing.T) {
	dir := t.TempDir()
	entries, _ := os.ReadDir(chatTinyDir)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(chatTinyDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644)
	}
	gen := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		c, out, _ := newCLI(t, "", nil)
		if err := c.run(append(append([]string{"run", "--threads", "1", "--max-tokens", "12"}, args...), dir, "hello there")); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}

	// do_sample false: greedy, as transformers and the server decode it.
	gen(`{"eos_token_id": 511, "do_sample": false}`)
	if got, greedy := run(), run("--temperature", "0"); got != greedy {
		t.Errorf("model asks for greedy: run answered %q, greedy is %q", got, greedy)
	}

	// The model's sampling defaults apply as if given as flags...
	gen(`{"eos_token_id": 511, "temperature": 0.7, "top_k": 5, "top_p": 0.9}`)
	byDefault := run("--seed", "3")
	if explicit := run("--seed", "3", "--temperature", "0.7", "--top-k", "5", "--top-p", "0.9"); byDefault != explicit {
		t.Errorf("model defaults: run answered %q, with the same values as flags %q", byDefault, explicit)
	}

	// ...and the server, asked with the same seed and nothing else, agrees.
	url := serveModel(t, dir)
	resp, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"hello there"}],"max_tokens":12,"seed":3}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var chat struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&chat); err != nil || len(chat.Choices) != 1 {
		t.Fatalf("chat: %d %v", resp.StatusCode, err)
	}
	if got := chat.Choices[0].Message.Content; strings.TrimRight(byDefault, "\n") != got {
		t.Errorf("hearth run answered %q, the server %q", byDefault, got)
	}
}

// serveModel runs `hearth serve --model dir` on a free port until the test
// ends and returns its URL.
func serveModel(t *testing.T, dir string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	c, _, errs := newCLI(t, "", mapEnv{"HEARTH_PORT": "0"})
	c.ctx, c.stdout = ctx, pw
	done := make(chan error, 1)
	go func() { done <- c.run([]string{"serve", "--threads", "1", "--quiet", "--model", dir}); pw.Close() }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, pr)
			return m[1]
		}
	}
	t.Fatalf("no banner; serve: %v; stderr %s", <-done, errs.String())
	return ""
}

// TestPullCatalogNeedsURL: with no published catalog address, the command
// asks for one instead of guessing.
func TestPullCatalogNeedsURL(t *testing.T) {
	c, _, _ := newCLI(t, "", mapEnv{"XDG_CACHE_HOME": t.TempDir()})
	if err := c.run([]string{"pull", "--catalog"}); err == nil || !strings.Contains(err.Error(), "HEARTH_CATALOG_URL") {
		t.Errorf("pull --catalog without a URL: %v", err)
	}
}
