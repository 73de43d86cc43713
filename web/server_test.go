package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"hearth/engine"
	"hearth/engine/pool"
	"hearth/internal/testmodels"
)

var update = flag.Bool("update", false, "rewrite web/testdata/*.golden")

// testServer is a real server on a random loopback port.
type testServer struct {
	URL  string
	pool *pool.Pool
	logs *logBuffer
}

type serverConfig struct {
	opt      Options
	runner   engine.RunnerOptions
	wrap     func(http.Handler) http.Handler
	listenOn string
	model    pool.Model   // the default model; chat-tiny when empty
	pool     pool.Options // more pool options (Runner and Default are set)
}

// chatTiny is the test model with a tokenizer and a ChatML template.
func chatTiny() pool.Model {
	return pool.Model{ID: "chat-tiny", Dir: filepath.Join(testmodels.Root(), "chat-tiny")}
}

// startServer serves chat-tiny on 127.0.0.1:0 until the test ends.
func startServer(t *testing.T, configure ...func(*serverConfig)) *testServer {
	t.Helper()
	cfg := serverConfig{runner: engine.RunnerOptions{Options: engine.Options{Threads: 1, Backend: "cpu"}}, listenOn: "127.0.0.1:0"}
	for _, f := range configure {
		f(&cfg)
	}
	if cfg.model.Dir == "" {
		cfg.model = chatTiny()
	}
	cfg.pool.Runner, cfg.pool.Default = cfg.runner, cfg.model
	p := pool.New(cfg.pool)
	logs := &logBuffer{}
	cfg.opt.Pool = p
	cfg.opt.Version = "test"
	cfg.opt.Logger = slog.New(slog.NewTextHandler(logs, nil))
	s := New(cfg.opt)
	ln, err := net.Listen("tcp", cfg.listenOn)
	if err != nil {
		t.Fatal(err)
	}
	h := s.handler(ln.Addr())
	if cfg.wrap != nil {
		h = cfg.wrap(h)
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
		p.Close()
	})
	return &testServer{URL: "http://" + ln.Addr().String(), pool: p, logs: logs}
}

// logBuffer collects the server's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// response is a finished HTTP exchange.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (ts *testServer) do(t *testing.T, method, path string, body string, header map[string]string) response {
	t.Helper()
	r, err := ts.send(method, path, body, header)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// send makes one request (safe to call from any goroutine).
func (ts *testServer) send(method, path string, body string, header map[string]string) (response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		return response{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

func (ts *testServer) post(t *testing.T, path, body string) response {
	t.Helper()
	return ts.do(t, http.MethodPost, path, body, nil)
}

// postOK posts and decodes a 200 answer into v.
func (ts *testServer) postOK(t *testing.T, path, body string, v any) {
	t.Helper()
	r := ts.post(t, path, body)
	if r.Status != http.StatusOK {
		t.Fatalf("POST %s = %d %s, want 200", path, r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, r.Body)
	}
}

// frame is one server-sent event.
type frame struct {
	Event string
	Data  string
}

// frames splits an SSE body into events.
func frames(t *testing.T, body []byte) []frame {
	t.Helper()
	var out []frame
	for _, block := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		var f frame
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				f.Event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				f.Data = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("unexpected SSE line %q in %q", line, body)
			}
		}
		out = append(out, f)
	}
	return out
}

// volatile matches the fields that change from run to run.
var volatile = regexp.MustCompile(`"(id|created)":("[^"]*"|\d+)`)

func normalize(s string) string {
	return volatile.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, `"id"`) {
			if strings.Contains(m, "chatcmpl-") || strings.Contains(m, "cmpl-") || strings.Contains(m, "msg_") {
				return `"id":"ID"`
			}
			return m
		}
		return `"created":0`
	})
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./web -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (run with -update and review the diff):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// readFrames reads SSE frames from a live stream until it ends.
func readFrames(r io.Reader, each func(frame) bool) error {
	br := bufio.NewReader(r)
	var f frame
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if !each(f) {
				return nil
			}
			f = frame{}
		case strings.HasPrefix(line, "event: "):
			f.Event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			f.Data = strings.TrimPrefix(line, "data: ")
		}
	}
}
