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
	"slices"
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

// hearthServer is a running `hearth serve`, which a test may stop and
// start again on the same port.
type hearthServer struct {
	models []string
	logs   *syncBuffer
	bin    string
	args   []string // without --port
	env    []string // set before a (re)start

	mu   sync.Mutex
	url  *url.URL
	halt func() // stops the running process and waits for it; nil when none runs
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

// hearthBin is the hearth binary built from this tree, once for all the
// package's tests (TestMain removes it).
var hearthBin struct {
	once      sync.Once
	dir, path string
	err       error
}

func hearthBinary(t *testing.T) string {
	t.Helper()
	hearthBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "hearth-ui-test-")
		if err != nil {
			hearthBin.err = err
			return
		}
		hearthBin.dir, hearthBin.path = dir, filepath.Join(dir, "hearth")
		if out, err := exec.Command(goTool(), "build", "-o", hearthBin.path, "hearth/app").CombinedOutput(); err != nil {
			hearthBin.err = fmt.Errorf("go build hearth/app: %v\n%s", err, out)
		}
	})
	if hearthBin.err != nil {
		t.Fatal(hearthBin.err)
	}
	return hearthBin.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if hearthBin.dir != "" {
		os.RemoveAll(hearthBin.dir)
	}
	os.Exit(code)
}

// startHearth serves chat-tiny with the hearth binary built from this tree,
// on a random loopback port, with hub as its Hugging Face cache and env
// added to its environment. It stops the server when t ends.
func startHearth(t *testing.T, hub string, env ...string) *hearthServer {
	t.Helper()
	return startHearthWith(t, filepath.Join(testmodels.Root(), "chat-tiny"), hub, env...)
}

// startHearthWith is startHearth serving the checkpoint in model.
func startHearthWith(t *testing.T, model, hub string, env ...string) *hearthServer {
	t.Helper()
	tmp := t.TempDir()
	s := &hearthServer{bin: hearthBinary(t), logs: &syncBuffer{},
		args: []string{"serve", "--host", "127.0.0.1", "--model", model},
		env:  append([]string{"HOME=" + tmp, "HF_HOME=" + filepath.Join(tmp, "hf"), "HF_HUB_CACHE=" + hub, "PATH=" + os.Getenv("PATH")}, env...)}
	if err := s.launch("0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("hearth serve log:\n%s", s.logs.String())
		}
	})
	base := s.base()
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

// base is the server's URL, without a final slash.
func (s *hearthServer) base() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url.String()
}

// launch starts the server on port ("0" for any) and waits until it
// listens.
func (s *hearthServer) launch(port string) error {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, s.bin, append(slices.Clone(s.args), "--port", port)...)
	cmd.Env = s.env
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Stderr = s.logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return fmt.Errorf("start hearth serve: %w", err)
	}
	found := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`listening on (http://\S+)`)
		for sc.Scan() {
			s.logs.Write(append(sc.Bytes(), '\n'))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	halt := func() {
		cancel()
		<-scanned // Wait closes stdout: read it all first
		cmd.Wait()
	}
	var base string
	select {
	case base = <-found:
	case <-scanned:
		halt()
		return fmt.Errorf("hearth serve --port %s exited before it listened; log:\n%s", port, s.logs.String())
	case <-time.After(2 * time.Minute):
		halt()
		return fmt.Errorf("hearth serve did not start listening in 2 minutes; log:\n%s", s.logs.String())
	}
	u, err := url.Parse(base)
	if err != nil {
		halt()
		return err
	}
	s.mu.Lock()
	s.url, s.halt = u, halt
	s.mu.Unlock()
	return nil
}

// stop stops the server (as Ctrl-C would) and waits for it to exit.
func (s *hearthServer) stop() {
	s.mu.Lock()
	halt := s.halt
	s.halt = nil
	s.mu.Unlock()
	if halt != nil {
		halt()
	}
}

// port is the port the server listens (or last listened) on.
func (s *hearthServer) port() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url.Port()
}

// restart stops the server and starts it again on the same port.
func (s *hearthServer) restart() error {
	port := s.port()
	s.stop()
	return s.launch(port)
}

// control serves a scenario's requests to change the world mid-scenario:
// POST /NAME runs actions[NAME] and answers 200, or 500 with its error.
// The driver finds it in the CONTROL variable.
func control(t *testing.T, actions map[string]func() error) string {
	mux := http.NewServeMux()
	for name, act := range actions {
		mux.HandleFunc("POST /"+name, func(w http.ResponseWriter, r *http.Request) {
			if err := act(); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			fmt.Fprintln(w, "ok")
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// driverEnv is what a scenario gets besides the server's URL.
type driverEnv struct {
	out, image, audio, shot string
	models                  []string
	control                 string            // see control
	vars                    map[string]string // the scenario's own inputs (VARS, as JSON)
}

// runDriver runs one e2e/driver.js scenario against base and returns its
// RESULT object. On failure the driver has saved a screenshot in env.out.
func runDriver(t *testing.T, scenario, base string, env driverEnv) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	models, _ := json.Marshal(env.models)
	vars, _ := json.Marshal(env.vars)
	cmd := exec.CommandContext(ctx, "node", "driver.js", scenario)
	cmd.Dir = "e2e"
	cmd.Env = append(os.Environ(), "HEARTH_URL="+base, "OUT_DIR="+env.out, "MODELS="+string(models),
		"IMAGE="+env.image, "AUDIO="+env.audio, "SHOT="+env.shot, "CONTROL="+env.control, "VARS="+string(vars))
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
	model := filepath.Join(testmodels.Root(), "chat-tiny")
	srv := startHearth(t, hubCopy(t, model, "hearth-test/chat-tiny-copy"))
	if len(srv.models) < 2 {
		t.Fatalf("the server lists %v; want chat-tiny and its copy", srv.models)
	}
	target, err := url.Parse(srv.base())
	if err != nil {
		t.Fatal(err)
	}
	rc := newRecorder(target)
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
		// Drop, paste, pick: the thumbnail and, chat-tiny being text-only,
		// the warning at attach time; sent anyway, the server's 400 names
		// the model and the image's part.
		{"attach", 0, func(t *testing.T, res map[string]any, chats []chatRecord) {
			wantChats(t, chats, 1)
			body := string(chats[0].Body)
			if chats[0].Status != 400 || strings.Count(body, `"type":"image_url"`) != 1 || !strings.Contains(body, `"url":"data:image/png;base64,`) {
				t.Errorf("the request: status %d, %d image parts; want one PNG data URL refused with 400", chats[0].Status, strings.Count(body, `"type":"image_url"`))
			}
			if res["param"] != "messages[0].content[0]" {
				t.Errorf("the 400 names %v, want the image part messages[0].content[0]", res["param"])
			}
		}},
		// After "Send anyway" with an image, the refused message is marked
		// and left out: the later text turns reach the server without it.
		{"poisoned", 0, func(t *testing.T, res map[string]any, chats []chatRecord) {
			wantChats(t, chats, 3)
			if chats[0].Status != 400 || !strings.Contains(string(chats[0].Body), `"type":"image_url"`) {
				t.Errorf("the first request: status %d; want the image refused with 400", chats[0].Status)
			}
			for i, c := range chats[1:] {
				if c.Status != 200 || strings.Contains(string(c.Body), "image_url") {
					t.Errorf("turn %d after the refused image: status %d, image in the request %v; want 200 without it", i+2, c.Status, strings.Contains(string(c.Body), "image_url"))
				}
			}
		}},
		// A conversation saved before the fix, with the image in it: the
		// next turn is refused once for it, then sent without it.
		{"legacy", 0, func(t *testing.T, res map[string]any, chats []chatRecord) {
			wantChats(t, chats, 2)
			if chats[0].Status != 400 || chats[1].Status != 200 || strings.Contains(string(chats[1].Body), "image_url") {
				t.Errorf("statuses %d, %d (image in the second %v); want 400 for the old image, then 200 without it",
					chats[0].Status, chats[1].Status, strings.Contains(string(chats[1].Body), "image_url"))
			}
		}},
		// The microphone: Chromium's fake device records a beep, and the
		// clip goes out in its own container for the server to decode.
		// chat-tiny takes no audio: the warning, then the server's 400.
		{"record", 0, func(t *testing.T, res map[string]any, chats []chatRecord) {
			wantChats(t, chats, 1)
			if chats[0].Status != 400 || !strings.Contains(string(chats[0].Body), `"type":"input_audio"`) {
				t.Errorf("the recording's request: status %d; want an input_audio part refused with 400", chats[0].Status)
			}
			if f := res["format"]; f != "webm" && f != "mp4" && f != "ogg" {
				t.Errorf("the recording went out as %v; want webm, mp4 or ogg, undecoded", f)
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

// TestBrowserThinking serves chat-tiny with a chat template that opens a
// <think> block, as Qwen 3.5's does: the server streams the reply as
// reasoning_content, which the page shows in its Thinking block and keeps
// out of later turns (the thinking scenario).
func TestBrowserThinking(t *testing.T) {
	browserNeeds(t)
	if testing.Short() {
		t.Skip("skipping the browser tests in -short mode")
	}
	dir := t.TempDir()
	tiny := filepath.Join(testmodels.Root(), "chat-tiny")
	for _, name := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json"} {
		b, err := os.ReadFile(filepath.Join(tiny, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const tmpl = "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}" +
		"{%- if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"
	cfg, _ := json.Marshal(map[string]any{"eos_token": "<|im_end|>", "chat_template": tmpl, "model_max_length": 256})
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startHearthWith(t, dir, t.TempDir())
	res := runDriver(t, "thinking", srv.base()+"/", driverEnv{out: t.ArtifactDir(), models: srv.models})
	if th, _ := res["thought"].(string); th == "" {
		t.Errorf("the page showed no thinking: %v", res)
	}
	if n, _ := res["requests"].(float64); n != 2 {
		t.Errorf("%v chat requests, want 2", res["requests"])
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
