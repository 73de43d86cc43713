package web

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// resources are what a leak would grow.
type resources struct {
	goroutines int
	fds        int   // open files; -1 where /proc/self/fd is not there
	rssBytes   int64 // resident set; -1 where /proc/self/status is not there
}

func measure() resources {
	r := resources{goroutines: runtime.NumGoroutine(), fds: -1, rssBytes: -1}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		r.fds = len(fds)
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" && f[2] == "kB" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					r.rssBytes = kb << 10
				}
			}
		}
	}
	return r
}

// The margins over idle that the load test allows: generous, since the
// runtime and the HTTP stack keep a few goroutines, files and pages of
// their own; a leak per stream (64 of them) is far beyond them.
const (
	goroutineMargin = 10
	fdMargin        = 8
	rssMargin       = 200 << 20
)

// beyond says which of r's resources are past idle's margins ("" if
// none).
func (r resources) beyond(idle resources) string {
	var over []string
	if r.goroutines > idle.goroutines+goroutineMargin {
		over = append(over, fmt.Sprintf("%d goroutines (idle %d)", r.goroutines, idle.goroutines))
	}
	if r.fds >= 0 && idle.fds >= 0 && r.fds > idle.fds+fdMargin {
		over = append(over, fmt.Sprintf("%d open files (idle %d)", r.fds, idle.fds))
	}
	if r.rssBytes >= 0 && idle.rssBytes >= 0 && r.rssBytes > idle.rssBytes+rssMargin {
		over = append(over, fmt.Sprintf("%d MB resident (idle %d MB)", r.rssBytes>>20, idle.rssBytes>>20))
	}
	return strings.Join(over, ", ")
}

// loadRoutes are the streaming routes the load test mixes, each with a
// short answer and the text its complete stream contains at the end.
var loadRoutes = []struct{ path, body, end string }{
	{"/v1/chat/completions", chatBody("hello there", 8, `,"stream":true`), "data: [DONE]\n\n"},
	{"/v1/completions", `{"prompt":"hello there","max_tokens":8,"temperature":0,"stream":true}`, "data: [DONE]\n\n"},
	{"/v1/messages", messagesBody("hello there", 8, `,"stream":true`), "event: message_stop\n"},
	{"/api/chat", `{"model":"chat-tiny","messages":[{"role":"user","content":"hello there"}],"options":{"temperature":0,"num_predict":8}}`, `"done":true`},
	{"/api/generate", `{"model":"chat-tiny","prompt":"hello there","options":{"temperature":0,"num_predict":8}}`, `"done":true`},
}

// TestLoad runs 64 concurrent streams over the routes, a third of them
// cancelled by their client after the first event, then checks that the
// goroutines, open files and memory they used are given back and that
// the server still answers: with requests run one at a time, and with 8
// decoding together (batched).
func TestLoad(t *testing.T) {
	for _, parallel := range []int{1, 8} {
		t.Run(fmt.Sprintf("parallel%d", parallel), func(t *testing.T) { testLoad(t, parallel) })
	}
}

func testLoad(t *testing.T, parallel int) {
	ts := startServingParallel(t, parallel, Options{}, nil)
	// No keep-alive: a connection idling in the client's pool is neither
	// a leak nor idle state.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	stream := func(path, body string, cancelAfterFirst bool) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+path, strings.NewReader(body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return "", fmt.Errorf("status %d %s", resp.StatusCode, b)
		}
		if cancelAfterFirst {
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			cancel()
			return line, err
		}
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	// Warm up: the model loaded and every route's one-time state made.
	for _, r := range loadRoutes {
		if out, err := stream(r.path, r.body, false); err != nil || !strings.Contains(out, r.end) {
			t.Fatalf("warm-up POST %s: %v, %q", r.path, err, out)
		}
	}
	idle := settle(measure(), resources{})

	const streams = 64
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for i := range streams {
		r := loadRoutes[i%len(loadRoutes)]
		cancelled := i%3 == 0
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := stream(r.path, r.body, cancelled)
			switch {
			case err != nil:
				errs <- fmt.Errorf("stream %d, POST %s: %v", i, r.path, err)
			case !cancelled && !strings.Contains(out, r.end):
				errs <- fmt.Errorf("stream %d, POST %s: no %q at the end of %q", i, r.path, r.end, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	if out, err := stream(loadRoutes[0].path, loadRoutes[0].body, false); err != nil || !strings.Contains(out, loadRoutes[0].end) {
		t.Errorf("a request after the load: %v, %q", err, out)
	}
	client.CloseIdleConnections()
	after := settle(measure(), idle)
	t.Logf("idle: %+v; after the load: %+v", idle, after)
	if over := after.beyond(idle); over != "" {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("after the load: %s\n%s", over, bytes.TrimSpace(buf))
	}
}

// settle waits for cur to come back within idle's margins (or, with no
// idle yet, for the goroutine count to stop falling), collecting garbage
// meanwhile, and returns the last measure. Connections and generations
// end asynchronously, so a fixed sleep would either waste time or fail.
func settle(cur, idle resources) resources {
	deadline := time.Now().Add(guard)
	for time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
		next := measure()
		if idle.goroutines == 0 {
			if next.goroutines >= cur.goroutines {
				return next
			}
		} else if next.beyond(idle) == "" {
			return next
		}
		cur = next
	}
	return cur
}
