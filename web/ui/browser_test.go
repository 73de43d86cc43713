package ui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"hearth/internal/testenv"
	"hearth/internal/testmodels"
)

// The browser tests drive the chat in Debian's Chromium through
// playwright-core (e2e/driver.js), against a real `hearth serve` built from
// this tree and serving testdata/models/chat-tiny (a real tokenizer and
// template with random weights: its text is gibberish, which is fine). A
// recording proxy between the two (recorder_test.go) shows what reached
// the server. web/ui/e2e/setup.sh installs Chromium and the npm package.

// browserNeeds skips (or, under HEARTH_REQUIRE_ALL=1, fails) t when
// Chromium, Node or the e2e npm packages are missing, and returns the
// Chromium path.
func browserNeeds(t *testing.T) string {
	t.Helper()
	chromium := "/usr/bin/chromium"
	_, err := os.Stat(chromium)
	testenv.Need(t, "Debian's chromium at /usr/bin/chromium (run web/ui/e2e/setup.sh)", err == nil)
	_, err = exec.LookPath("node")
	testenv.Need(t, "node (Node.js; run web/ui/e2e/setup.sh)", err == nil)
	_, err = os.Stat(filepath.Join("e2e", "node_modules", "playwright-core", "package.json"))
	testenv.Need(t, "web/ui/e2e/node_modules/playwright-core (run web/ui/e2e/setup.sh)", err == nil)
	return chromium
}

// hearthServer is a running `hearth serve`.
type hearthServer struct {
	url    *url.URL
	models []string
	logs   *syncBuffer
}

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

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// hubCopy makes a Hugging Face cache holding chat-tiny once more under
// another repo id, so the server has two models to switch between.
func hubCopy(t *testing.T, src, repo string) string {
	t.Helper()
	hub := t.TempDir()
	const rev = "0123456789abcdef0123456789abcdef01234567"
	dir := filepath.Join(hub, "models--"+strings.ReplaceAll(repo, "/", "--"))
	snap := filepath.Join(dir, "snapshots", rev)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "refs", "main"), []byte(rev), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(snap, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return hub
}

// startHearth builds the hearth binary from this tree and serves chat-tiny
// on a random loopback port, with a second copy of it in a private
// Hugging Face cache. It stops the server when t ends.
func startHearth(t *testing.T) *hearthServer {
	t.Helper()
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "hearth")
	build := exec.Command(goTool(), "build", "-o", bin, "hearth/app")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build hearth/app: %v\n%s", err, out)
	}
	model := filepath.Join(testmodels.Root(), "chat-tiny")
	hub := hubCopy(t, model, "hearth-test/chat-tiny-copy")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", "--host", "127.0.0.1", "--port", "0", "--model", model)
	cmd.Env = []string{"HOME=" + tmp, "HF_HOME=" + filepath.Join(tmp, "hf"), "HF_HUB_CACHE=" + hub, "PATH=" + os.Getenv("PATH")}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	logs := &syncBuffer{}
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start hearth serve: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("hearth serve log:\n%s", logs.String())
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`listening on (http://\S+)`)
		for sc.Scan() {
			logs.Write(append(sc.Bytes(), '\n'))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var base string
	select {
	case base = <-found:
	case <-time.After(2 * time.Minute):
		t.Fatalf("hearth serve did not start listening in 2 minutes; log:\n%s", logs.String())
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	s := &hearthServer{url: u, logs: logs}
	page, err := http.Get(base + "/")
	if err != nil {
		t.Fatalf("GET /: %v", err)
	}
	page.Body.Close()
	if page.StatusCode != 200 || page.Header.Get("Content-Security-Policy") != CSP {
		t.Fatalf("hearth serve does not serve the chat at / (status %d, CSP %q): web.Server must mount ui.Handler() for GET and HEAD /*",
			page.StatusCode, page.Header.Get("Content-Security-Policy"))
	}
	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		t.Fatalf("GET /v1/models: %v", err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatalf("GET /v1/models: %v", err)
	}
	for _, m := range list.Data {
		s.models = append(s.models, m.ID)
	}
	return s
}

// driverEnv is what a scenario gets besides the server's URL.
type driverEnv struct {
	out, image, audio, shot string
	models                  []string
}

// runDriver runs one e2e/driver.js scenario against base and returns its
// RESULT object. On failure the driver has saved a screenshot in env.out.
func runDriver(t *testing.T, scenario, base string, env driverEnv) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	models, _ := json.Marshal(env.models)
	cmd := exec.CommandContext(ctx, "node", "driver.js", scenario)
	cmd.Dir = "e2e"
	cmd.Env = append(os.Environ(), "HEARTH_URL="+base, "OUT_DIR="+env.out, "MODELS="+string(models),
		"IMAGE="+env.image, "AUDIO="+env.audio, "SHOT="+env.shot)
	out, err := cmd.CombinedOutput()
	if err != nil {
		keepShots(t, env.out)
		t.Fatalf("scenario %s: %v\n%s", scenario, err, out)
	}
	i := bytes.LastIndex(out, []byte("RESULT "))
	if i < 0 {
		t.Fatalf("scenario %s printed no RESULT:\n%s", scenario, out)
	}
	var res map[string]any
	line, _, _ := bytes.Cut(out[i+len("RESULT "):], []byte("\n"))
	if err := json.Unmarshal(line, &res); err != nil {
		t.Fatalf("scenario %s: RESULT %q: %v", scenario, line, err)
	}
	return res
}

// keepShots copies failure screenshots to $OUT/web-ui when OUT is set
// (the artifact directory is kept only under go test -artifacts).
func keepShots(t *testing.T, dir string) {
	dst := os.Getenv("OUT")
	shots, _ := filepath.Glob(filepath.Join(dir, "*.png"))
	for _, s := range shots {
		t.Logf("screenshot: %s", s)
		if dst == "" {
			continue
		}
		if b, err := os.ReadFile(s); err == nil {
			os.MkdirAll(filepath.Join(dst, "web-ui"), 0o755)
			os.WriteFile(filepath.Join(dst, "web-ui", t.Name()[strings.LastIndex(t.Name(), "/")+1:]+"-"+filepath.Base(s)), b, 0o644)
		}
	}
}

func TestBrowser(t *testing.T) {
	browserNeeds(t)
	if testing.Short() {
		t.Skip("skipping the browser tests in -short mode")
	}
	srv := startHearth(t)
	if len(srv.models) < 2 {
		t.Fatalf("the server lists %v; want chat-tiny and its copy", srv.models)
	}
	rc := newRecorder(srv.url)
	front := httptest.NewServer(rc)
	defer front.Close()
	fixtures := t.TempDir()
	image, audio := writeFixtures(t, fixtures)

	scenarios := []struct {
		name  string
		pace  time.Duration
		check func(t *testing.T, res map[string]any, chats []chatRecord)
	}{
		// paced so that even a short random reply (6 tokens, seen once at
		// 10 ms a frame) lasts several of the scenario's 40 ms looks
		{"stream", 30 * time.Millisecond, func(t *testing.T, res map[string]any, chats []chatRecord) {
			wantChats(t, chats, 1)
			if c := chats[0]; c.Status != 200 || c.ClientGone || c.Frames < 3 {
				t.Errorf("chat: status %d, %d frames, client gone %v; want 200, several frames, a complete stream", c.Status, c.Frames, c.ClientGone)
			}
		}},
		{"stop", 60 * time.Millisecond, func(t *testing.T, res map[string]any, chats []chatRecord) {
			wantChats(t, chats, 2)
			if !chats[0].ClientGone {
				t.Errorf("the stopped stream was not closed by the browser: %+v", chats[0])
			}
			if chats[1].Status != 200 || chats[1].ClientGone {
				t.Errorf("the request after Stop: status %d, client gone %v", chats[1].Status, chats[1].ClientGone)
			}
		}},
		{"models", 0, func(t *testing.T, res map[string]any, chats []chatRecord) {
			wantChats(t, chats, 1)
			b, err := chats[0].body()
			if err != nil || b.Model != res["to"] || chats[0].Status != 200 {
				t.Errorf("chat went to model %q (status %d, %v); the picker chose %v", b.Model, chats[0].Status, err, res["to"])
			}
		}},
		{"media", 0, func(t *testing.T, res map[string]any, chats []chatRecord) {
			wantChats(t, chats, 1)
			body := string(chats[0].Body)
			for _, part := range []string{`"type":"image_url"`, `"url":"data:image/png;base64,`, `"type":"input_audio"`, `"format":"wav"`} {
				if !strings.Contains(body, part) {
					t.Errorf("the request reaching the server lacks %s", part)
				}
			}
			// chat-tiny is text-only: the page warns before sending, and
			// after "Send anyway" shows the server's 400 verbatim.
			if res["capabilityMessage"] == nil {
				t.Errorf("no capability message before sending to a text-only model: %v", res)
			}
			if chats[0].Status != 400 || res["serverMessage"] == "" || res["serverMessage"] == nil {
				t.Errorf("server status %d, message shown %v; want the 400's message", chats[0].Status, res["serverMessage"])
			}
		}},
		{"persist", 0, func(t *testing.T, res map[string]any, chats []chatRecord) { wantChats(t, chats, 2) }},
		{"edit", 0, func(t *testing.T, res map[string]any, chats []chatRecord) { wantChats(t, chats, 4) }},
		{"settings", 0, func(t *testing.T, res map[string]any, chats []chatRecord) {
			wantChats(t, chats, 1)
			if b, err := chats[0].body(); err != nil || b.Temperature == nil || *b.Temperature != 0.3 || b.Messages[0].Role != "system" {
				t.Errorf("settings did not reach the server: %s", chats[0].Body)
			}
		}},
		{"render", 0, nil},
		{"keyboard", 0, nil},
		{"narrow", 0, nil},
		{"dark", 0, nil},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			rc.reset(sc.pace)
			env := driverEnv{out: t.ArtifactDir(), image: image, audio: audio, models: srv.models}
			res := runDriver(t, sc.name, front.URL+"/", env)
			chats := rc.records()
			for _, c := range chats {
				if c.Status >= 500 {
					t.Errorf("server error %d for %s", c.Status, c.Body)
				}
			}
			if sc.check != nil {
				sc.check(t, res, chats)
			}
			if t.Failed() {
				keepShots(t, env.out)
			}
		})
	}
}

func wantChats(t *testing.T, chats []chatRecord, n int) {
	t.Helper()
	if len(chats) != n {
		var bodies []string
		for _, c := range chats {
			bodies = append(bodies, fmt.Sprintf("%d %.200s", c.Status, c.Body))
		}
		t.Fatalf("%d chat requests reached the server, want %d: %v", len(chats), n, bodies)
	}
}
