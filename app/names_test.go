package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"hearth/engine/registry"
)

// TestServerResolverTakesNoPaths: the server's resolver (names from HTTP
// requests) never looks a name up on disk: a path to a model directory, a
// file, a directory or nothing at all is an unknown name, with the same
// message as any other.
func TestServerResolverTakesNoPaths(t *testing.T) {
	home := t.TempDir()
	file := filepath.Join(home, ".bashrc")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _, _ := newCLI(t, "", mapEnv{"HF_HOME": home})
	for _, name := range []string{
		"nobody/nothing", "~/", "~/../etc", "~/.bashrc", "../../etc/passwd", "/etc/passwd", "/", "..",
		chatTinyDir, filepath.Join(chatTinyDir, "config.json"), file, home, filepath.Join(file, "x"),
	} {
		_, err := c.registryResolve(name)
		if !errors.Is(err, registry.ErrNotFound) || err.Error() != registry.UnknownName(name).Error() {
			t.Errorf("registryResolve(%q) = %v, want %v", name, err, registry.UnknownName(name))
		}
	}
}

// TestServeModelDirByItsID: a model served from a directory (serve --model
// DIR) answers over HTTP to the id the server reports for it, never to
// its path.
func TestServeModelDirByItsID(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	c, _, errs := newCLI(t, "", mapEnv{"HEARTH_PORT": "0", "HF_HOME": t.TempDir()})
	c.ctx, c.stdout = ctx, pw
	done := make(chan error, 1)
	go func() {
		done <- c.run([]string{"serve", "--threads", "1", "--quiet", "--model", chatTinyDir})
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var id, url string
	for sc.Scan() {
		if m := regexp.MustCompile(`serving (\S+) `).FindStringSubmatch(sc.Text()); m != nil {
			id = m[1]
		}
		if m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
		if id != "" && url != "" {
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if url == "" || id == "" {
		t.Fatalf("no banner; serve: %v; stderr %s", <-done, errs.String())
	}
	post := func(path, model string) int {
		b, _ := json.Marshal(map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": "hi"}}, "max_tokens": 1})
		resp, err := http.Post(url+path, "application/json", strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/v1/chat/completions", "/api/show"} {
		if got := post(path, id); got != http.StatusOK {
			t.Errorf("POST %s with the reported id %q = %d, want 200", path, id, got)
		}
		if got := post(path, chatTinyDir); got != http.StatusNotFound {
			t.Errorf("POST %s with the model's path = %d, want 404", path, got)
		}
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
}
