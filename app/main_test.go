package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"hearth/engine"
	"hearth/engine/fit"
	"hearth/internal/testmodels"
)

// mapEnv is a test environment.
type mapEnv map[string]string

func (m mapEnv) Getenv(k string) string { return m[k] }

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newCLI makes a cli with an empty Hugging Face cache and the given stdin
// text (a pipe, not a terminal).
func newCLI(t *testing.T, stdin string, env mapEnv) (*cli, *syncBuffer, *syncBuffer) {
	t.Helper()
	if env == nil {
		env = mapEnv{}
	}
	if _, ok := env["HF_HOME"]; !ok {
		env["HF_HOME"] = t.TempDir()
	}
	if _, ok := env["XDG_CACHE_HOME"]; !ok {
		env["XDG_CACHE_HOME"] = t.TempDir() // where the starter model is extracted
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { io.WriteString(w, stdin); w.Close() }()
	t.Cleanup(func() { r.Close() })
	out, errs := &syncBuffer{}, &syncBuffer{}
	return &cli{ctx: context.Background(), env: env, stdin: r, stdout: out, stderr: errs}, out, errs
}

var chatTinyDir = filepath.Join(testmodels.Root(), "chat-tiny")

func TestVersionAndUsage(t *testing.T) {
	c, out, _ := newCLI(t, "", nil)
	if err := c.run([]string{"version"}); err != nil || !strings.HasPrefix(out.String(), "hearth "+version+" (go") {
		t.Errorf("version: %v %q", err, out.String())
	}
	for _, args := range [][]string{{"--version"}, {"-v"}} {
		c, out, _ := newCLI(t, "", nil)
		if err := c.run(args); err != nil || !strings.HasPrefix(out.String(), "hearth "+version+" (go") {
			t.Errorf("%v: %v %q", args, err, out.String())
		}
	}
	// The program's help lists the commands, not serve's flags.
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		c, out, _ := newCLI(t, "", nil)
		if err := c.run(args); err != nil || !strings.Contains(out.String(), "Usage: hearth COMMAND") || !strings.Contains(out.String(), "pull MODEL") {
			t.Errorf("%v: %v %q", args, err, out.String())
		}
	}
	// A command's -h prints its flags and is flag.ErrHelp, which main
	// exits 0 on; ps's --host is the server's address, not one to listen on.
	c, _, errs := newCLI(t, "", nil)
	if err := c.run([]string{"ps", "-h"}); !errors.Is(err, flag.ErrHelp) || !strings.Contains(errs.String(), "address of the running server") || strings.Contains(errs.String(), "listen") {
		t.Errorf("ps -h: %v; stderr %q", err, errs.String())
	}
	c, _, errs = newCLI(t, "", nil)
	if err := c.run([]string{"frobnicate"}); err == nil || !strings.Contains(err.Error(), `unknown command "frobnicate"`) || !strings.Contains(errs.String(), "Usage: hearth") {
		t.Errorf("unknown command: %v; stderr %q", err, errs.String())
	}
}

func TestAddrFlags(t *testing.T) {
	tests := []struct {
		name  string
		env   mapEnv
		args  []string
		want  string
		isErr bool
	}{
		{"defaults", nil, nil, "127.0.0.1:11435", false},
		{"env host and port", mapEnv{"HEARTH_HOST": "0.0.0.0", "HEARTH_PORT": "8080"}, nil, "0.0.0.0:8080", false},
		{"env host with port", mapEnv{"HEARTH_HOST": "[::1]:9000"}, nil, "[::1]:9000", false},
		{"flags win over env", mapEnv{"HEARTH_PORT": "8080"}, []string{"--port", "9090", "--host", "localhost"}, "localhost:9090", false},
		{"bad env port", mapEnv{"HEARTH_PORT": "http"}, nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, _ := newCLI(t, "", tt.env)
			fs := c.flags("x", "x")
			a, err := c.addrFlags(fs, true)
			if tt.isErr {
				if err == nil {
					t.Errorf("no error for %v", tt.env)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if got := a.addr(); got != tt.want {
				t.Errorf("addr() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRunAnswersPrompt(t *testing.T) {
	args := []string{"run", "--temperature", "0", "--max-tokens", "8", "--verbose", chatTinyDir}
	c, out, errs := newCLI(t, "", nil)
	if err := c.run(append(args, "hello", "there")); err != nil {
		t.Fatal(err)
	}
	if out.String() == "" || !strings.Contains(errs.String(), "answer 8 tokens") {
		t.Errorf("stdout %q, stderr %q", out.String(), errs.String())
	}
	// The same prompt piped on stdin gets the same greedy answer.
	c, piped, _ := newCLI(t, "hello there\n", nil)
	if err := c.run(args); err != nil {
		t.Fatal(err)
	}
	if piped.String() != out.String() {
		t.Errorf("piped prompt answered %q, argument prompt %q", piped.String(), out.String())
	}
	c, _, _ = newCLI(t, "", nil)
	if err := c.run([]string{"run", chatTinyDir}); err == nil || !strings.Contains(err.Error(), "no prompt") {
		t.Errorf("empty stdin: %v", err)
	}
	c, _, _ = newCLI(t, "", nil)
	if err := c.run([]string{"run", "--temperature", "-1", chatTinyDir, "hi"}); err == nil || !strings.Contains(err.Error(), "temperature") {
		t.Errorf("bad temperature: %v", err)
	}
}

func TestREPL(t *testing.T) {
	c, out, _ := newCLI(t, "hi\n/clear\n\"\"\"\nfirst line\nsecond line\n\"\"\"\n/?\n/bye\nnever read\n", nil)
	m, err := c.resolveModel(chatTinyDir, fit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opt, err := runnerFlags{threads: new(int), ctx: new(int)}.options(1)
	if err != nil {
		t.Fatal(err)
	}
	opt.ID = m.ID
	r, err := engine.Open(m.Dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ch := &chat{c: c, r: r, max: 4}
	if err := ch.repl(); err != nil {
		t.Fatal(err)
	}
	o := out.String()
	if strings.Count(o, ">>> ") != 5 || !strings.Contains(o, "(conversation cleared)") || !strings.Contains(o, "/bye") {
		t.Errorf("REPL output:\n%s", o)
	}
	if len(ch.history) != 2 || ch.history[0]["content"] != "first line\nsecond line" {
		t.Errorf("history = %v, want the multi-line message and its answer only", ch.history)
	}
}

func TestServeAndPS(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	c, _, errs := newCLI(t, "", mapEnv{"HEARTH_PORT": "0"})
	c.ctx, c.stdout = ctx, pw
	done := make(chan error, 1)
	go func() { done <- c.run([]string{"--threads", "1", "--quiet", "--keep-alive", "1h"}); pw.Close() }()

	// The banner names the port.
	sc := bufio.NewScanner(pr)
	var url string
	for sc.Scan() {
		if m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if url == "" {
		t.Fatalf("no banner; serve: %v; stderr %s", <-done, errs.String())
	}
	resp, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}`))
	if err != nil {
		t.Fatal(err)
	}
	var chat struct {
		Model string `json:"model"`
	}
	json.NewDecoder(resp.Body).Decode(&chat)
	resp.Body.Close()
	if resp.StatusCode != 200 || chat.Model != "hearth/starter" {
		t.Errorf("chat: %d, model %q", resp.StatusCode, chat.Model)
	}

	port := url[strings.LastIndex(url, ":")+1:]
	ps, out, _ := newCLI(t, "", nil)
	if err := ps.run([]string{"ps", "--port", port}); err != nil {
		t.Fatal(err)
	}
	// The idle model unloads an hour after the request (--keep-alive).
	if !strings.Contains(out.String(), "hearth/starter") || !strings.Contains(out.String(), "memory: server") ||
		!regexp.MustCompile(`\bin (1h0m0s|59m\d+s)\n`).MatchString(out.String()) {
		t.Errorf("ps:\n%s", out.String())
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	ps, _, _ = newCLI(t, "", nil)
	if err := ps.run([]string{"ps", "--port", port}); err == nil || !strings.Contains(err.Error(), "is the server running") {
		t.Errorf("ps with no server: %v", err)
	}
}

// TestLsAndRm lists a model placed in a Hugging Face cache layout and
// deletes it.
func TestLsAndRm(t *testing.T) {
	home := t.TempDir()
	repo := filepath.Join(home, "hub", "models--acme--tiny-chat")
	const commit = "0123456789abcdef0123456789abcdef01234567"
	snap := filepath.Join(repo, "snapshots", commit)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(chatTinyDir)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(chatTinyDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(snap, e.Name()), b, 0o644)
	}
	os.MkdirAll(filepath.Join(repo, "refs"), 0o755)
	os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commit), 0o644)
	env := mapEnv{"HF_HOME": home}

	c, out, _ := newCLI(t, "", env)
	if err := c.run([]string{"ls"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "acme/tiny-chat") || !strings.Contains(out.String(), "generic") {
		t.Errorf("ls:\n%s", out.String())
	}
	// The server resolves it by repo id, never by a path.
	if m, err := c.registryResolve("acme/tiny-chat"); err != nil || m.ID != "acme/tiny-chat" || m.Dir != snap {
		t.Errorf("registryResolve = %+v, %v", m, err)
	}
	if _, err := c.registryResolve(chatTinyDir); err == nil {
		t.Errorf("the server resolved a directory path")
	}

	// An alias (POST /api/copy's) shows in ls and goes alone with rm.
	env["XDG_CONFIG_HOME"] = t.TempDir()
	c, out, _ = newCLI(t, "", env)
	if _, err := c.registry().Copy("acme/tiny-chat", "my-chat"); err != nil {
		t.Fatal(err)
	}
	if err := c.run([]string{"ls"}); err != nil || !strings.Contains(out.String(), "my-chat → acme/tiny-chat") {
		t.Errorf("ls with an alias: %v\n%s", err, out.String())
	}
	c, out, _ = newCLI(t, "", env)
	if err := c.run([]string{"rm", "my-chat"}); err != nil || out.String() != "deleted the alias my-chat\n" {
		t.Fatalf("rm of an alias: %v %q", err, out.String())
	}
	if _, err := os.Stat(repo); err != nil {
		t.Errorf("removing the alias removed the model: %v", err)
	}

	c, out, _ = newCLI(t, "", env)
	if err := c.run([]string{"rm", "acme/tiny-chat"}); err != nil || out.String() != "deleted acme/tiny-chat\n" {
		t.Fatalf("rm: %v %q", err, out.String())
	}
	if _, err := os.Stat(repo); !os.IsNotExist(err) {
		t.Errorf("the repo is still there: %v", err)
	}
	c, _, _ = newCLI(t, "", env)
	if err := c.run([]string{"rm", "acme/tiny-chat"}); err == nil || !strings.Contains(err.Error(), "not in") {
		t.Errorf("rm of a missing model: %v", err)
	}
	c, _, _ = newCLI(t, "", env)
	if err := c.run([]string{"rm", "hearth/starter"}); err == nil || !strings.Contains(err.Error(), "built into hearth") {
		t.Errorf("rm of the built-in model: %v", err)
	}
}
