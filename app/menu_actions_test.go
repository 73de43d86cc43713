package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"hearth/engine"
	"hearth/engine/fit"
	"hearth/engine/pool"
	"hearth/engine/registry"
)

func TestActivate(t *testing.T) {
	tests := []struct {
		id    string
		calls []string
	}{
		{rowChat, []string{"open http://127.0.0.1:11435/"}},
		{rowCopy, []string{"copy http://127.0.0.1:11435/v1"}},
		{rowStatus, nil}, // information rows do nothing
		{rowMemory, nil},
	}
	for _, tt := range tests {
		m, d := newTestMenu(t)
		if err := m.Activate(tt.id); err != nil {
			t.Errorf("%s: %v", tt.id, err)
		}
		if got := d.Calls(); !slices.Equal(got, tt.calls) {
			t.Errorf("%s: desktop calls %q, want %q", tt.id, got, tt.calls)
		}
	}

	// A desktop that fails shows why in the menu, until the next action.
	m, d := newTestMenu(t)
	d.err = errors.New("xdg-open: exec: not found")
	if err := m.Activate(rowChat); err == nil || m.State().Failure != "could not open the chat: xdg-open: exec: not found" {
		t.Errorf("failed open: %v, failure %q", err, m.State().Failure)
	}
	d.err = nil
	if m.Activate(rowCopy); m.State().Failure != "" {
		t.Errorf("the failure outlived the next action: %q", m.State().Failure)
	}

	// Nothing to open before the engine listens.
	m, d = newTestMenu(t, func(deps *menuDeps) { deps.URL = func() (string, error) { return "", nil } })
	if err := m.Activate(rowChat); err == nil || len(d.Calls()) != 0 {
		t.Errorf("chat before the engine: %v, calls %q", err, d.Calls())
	}

	quit := false
	m, _ = newTestMenu(t, func(deps *menuDeps) { deps.Quit = func() { quit = true } })
	if m.Activate(rowQuit); !quit {
		t.Error("Quit did not quit")
	}

	m, _ = newTestMenu(t, func(deps *menuDeps) { deps.Login = nil })
	if err := m.Activate(rowLogin); err == nil || !findRow(m.View().Items, rowLogin).Disabled {
		t.Errorf("launch at login without a switch: %v", err)
	}
}

func TestActivateLoad(t *testing.T) {
	started, finish := make(chan string), make(chan error)
	m, _ := newTestMenu(t, func(d *menuDeps) {
		d.Load = func(ctx context.Context, name string) error { started <- name; return <-finish }
	})
	done := make(chan error)
	go func() { done <- m.Activate(rowLoad + "acme/tight") }()
	if got := <-started; got != "acme/tight" {
		t.Errorf("loaded %q, want acme/tight", got)
	}
	if v := m.View(); !v.Busy || findRow(v.Items, rowActivity).Title != "Loading acme/tight…" {
		t.Errorf("while loading: busy %v, activity %q", v.Busy, findRow(v.Items, rowActivity).Title)
	}
	finish <- fmt.Errorf("%w: acme/tight", registry.ErrNotFound)
	err := <-done
	if !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("load error %v, want registry.ErrNotFound", err)
	}
	if v := m.View(); v.Busy || !strings.HasPrefix(findRow(v.Items, rowActivity).Title, "⚠ Could not load acme/tight: model not found") {
		t.Errorf("after a failed load: busy %v, activity %q", v.Busy, findRow(v.Items, rowActivity).Title)
	}
}

func TestActivatePull(t *testing.T) {
	tests := []struct {
		name      string
		answer    string
		ok        bool
		askErr    error
		pullErr   error
		describe  error
		pulled    string // what Pull got; "" for no pull
		lastCall  string
		failure   string
		returnErr bool
	}{
		{name: "pulls and notifies", answer: " acme/new ", ok: true, pulled: "acme/new",
			lastCall: "notify Pulled acme/new: generic tier (llama), 1.0 GB. Choose it under Models to load it."},
		{name: "cancelled", answer: "acme/new", ok: false, lastCall: "ask Pull a Model"},
		{name: "empty answer", answer: "  ", ok: true, lastCall: "ask Pull a Model"},
		{name: "no dialog", askErr: errors.New("no dialog tool"), lastCall: "ask Pull a Model",
			failure: "could not ask for a model to pull: no dialog tool", returnErr: true},
		{name: "pull fails", answer: "acme/gone", ok: true, pullErr: registry.ErrNotFound, pulled: "acme/gone",
			lastCall: "notify Pull failed: acme/gone: model not found", failure: "could not pull acme/gone: model not found", returnErr: true},
		{name: "pulled but unsupported", answer: "acme/rwkv", ok: true, describe: errors.New(`unsupported model_type "rwkv7"`), pulled: "acme/rwkv",
			lastCall: `notify Pulled acme/rwkv: Downloaded, but Hearth cannot serve it: unsupported model_type "rwkv7"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pulled string
			var progressed []menuView
			var m *menuModel
			m, d := newTestMenu(t, func(deps *menuDeps) {
				deps.Pull = func(ctx context.Context, name string, progress func(registry.Progress)) error {
					pulled = name
					progress(registry.Progress{Repo: name, Status: registry.StatusDownloading, Completed: 50, Total: 200})
					progressed = append(progressed, m.View())
					return tt.pullErr
				}
				deps.Describe = func(name string) (registry.Record, error) { return testRecord(name, gb), tt.describe }
			})
			d.answer, d.answerOK, d.err = tt.answer, tt.ok, tt.askErr
			err := m.Activate(rowPull)
			if (err != nil) != tt.returnErr {
				t.Errorf("Activate: %v", err)
			}
			if pulled != tt.pulled {
				t.Errorf("pulled %q, want %q", pulled, tt.pulled)
			}
			if calls := d.Calls(); len(calls) == 0 || calls[len(calls)-1] != tt.lastCall {
				t.Errorf("desktop calls %q, want the last %q", calls, tt.lastCall)
			}
			if got := m.State().Failure; got != tt.failure {
				t.Errorf("failure %q, want %q", got, tt.failure)
			}
			if tt.pulled != "" {
				if len(progressed) != 1 || !progressed[0].Busy || findRow(progressed[0].Items, rowActivity).Title != "Pulling "+tt.pulled+": 25% of 200 B" {
					t.Errorf("during the pull: %+v", progressed)
				}
			}
			if m.State().Pulling != "" || m.View().Busy {
				t.Errorf("still pulling after the pull: %+v", m.State())
			}
		})
	}
}

// TestMenuRun drives the refresh loop with a fake clock: each tick re-reads
// memory and redraws.
func TestMenuRun(t *testing.T) {
	free := make(chan int64, 2)
	reads := 0
	m, _ := newTestMenu(t, func(d *menuDeps) {
		d.Memory = func() (fit.Memory, error) {
			reads++
			mem := testMemory
			select {
			case mem.AvailableBytes = <-free:
			default:
			}
			return mem, nil
		}
	})
	free <- 9 * gb
	free <- 8 * gb
	reads = 0
	tick := make(chan time.Time)
	drawn := make(chan menuView)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx, tick, func(v menuView) { drawn <- v }); close(done) }()
	memRow := func(v menuView) string { return findRow(v.Items, rowMemory).Title }
	if got := memRow(<-drawn); !strings.HasSuffix(got, "; 9.0 GB free of 16.0 GB") {
		t.Errorf("first draw %q", got)
	}
	tick <- time.Now()
	if got := memRow(<-drawn); !strings.HasSuffix(got, "; 8.0 GB free of 16.0 GB") {
		t.Errorf("after a tick %q", got)
	}
	// An action's change is drawn without waiting for a tick.
	go m.Activate(rowLogin)
	if v := <-drawn; !findRow(v.Items, rowLogin).Checked {
		for !findRow(v.Items, rowLogin).Checked {
			v = <-drawn
		}
	}
	cancel()
	for {
		select {
		case <-drawn:
			continue
		case <-done:
		}
		break
	}
	if reads < 2 {
		t.Errorf("memory read %d times, want one per refresh", reads)
	}
}

// TestMenuLoadsThroughPool checks the menu acts through what the server
// uses: the registry lists the cache (and the built-in default model), a
// model row loads through the server's pool and resolver, and a name the
// server cannot resolve fails the same way an HTTP request does.
func TestMenuLoadsThroughPool(t *testing.T) {
	home := t.TempDir()
	cacheRepo(t, filepath.Join(home, "hub"), "acme/tiny-chat", chatTinyDir)
	c, _, _ := newCLI(t, "", mapEnv{"HF_HOME": home})
	def, err := c.defaultModel()
	if err != nil {
		t.Fatal(err)
	}
	p := pool.New(pool.Options{Runner: engine.RunnerOptions{Options: engine.Options{Threads: 1, Backend: "cpu"}, QueueLen: 4}, Default: def, Resolve: c.registryResolve})
	defer p.Close()
	m, _ := newTestMenu(t, func(d *menuDeps) {
		d.Loaded, d.Models, d.Memory = p.Loaded, c.menuModels(def), fit.System
		d.Load = func(ctx context.Context, name string) error { return loadInto(ctx, p, name) }
	})
	rows := findRow(m.View().Items, rowModels).Children
	var names []string
	for _, r := range rows {
		names = append(names, strings.TrimPrefix(r.ID, rowLoad))
	}
	if !slices.Equal(names, []string{"acme/tiny-chat", "hearth/starter"}) {
		t.Fatalf("Models submenu %q, want acme/tiny-chat and hearth/starter", names)
	}
	for _, name := range []string{"acme/tiny-chat", "hearth/starter"} {
		if err := m.Activate(rowLoad + name); err != nil {
			t.Fatal(err)
		}
		// Models stay loaded side by side; the one chosen last comes first.
		loaded := p.Loaded()
		if len(loaded) == 0 || loaded[0].ID != name {
			t.Fatalf("after choosing %s the pool holds %+v", name, loaded)
		}
		v := m.View()
		if row := findRow(v.Items, rowLoad+name); !row.Checked {
			t.Errorf("row %+v is not checked", row)
		}
		want := "Model: " + name + " (generic tier)"
		if len(loaded) > 1 {
			want += fmt.Sprintf(" + %d more loaded", len(loaded)-1)
		}
		if got := findRow(v.Items, rowModel).Title; got != want {
			t.Errorf("model row %q, want %q", got, want)
		}
		// Every loaded model stays checked.
		for _, l := range loaded {
			if row := findRow(v.Items, rowLoad+l.ID); !row.Checked {
				t.Errorf("loaded %s: row %+v is not checked", l.ID, row)
			}
		}
		if got := findRow(v.Items, rowStatus).Title; !strings.HasSuffix(got, " · cpu") {
			t.Errorf("status row %q, want the cpu backend", got)
		}
	}
	if err := m.Activate(rowLoad + "acme/missing"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("loading a missing model: %v, want registry.ErrNotFound", err)
	}
}

// TestMenuPullsFromHub pulls through hearth pull's own function from a
// local stand-in for the hub, and the pulled model shows up under Models.
func TestMenuPullsFromHub(t *testing.T) {
	hub := newTestHub(t, "acme/tiny-chat", chatTinyDir)
	home := t.TempDir()
	c, _, _ := newCLI(t, "", mapEnv{"HF_HOME": home, "HF_ENDPOINT": hub.URL})
	def, err := c.defaultModel()
	if err != nil {
		t.Fatal(err)
	}
	m, d := newTestMenu(t, func(deps *menuDeps) {
		deps.Models, deps.Pull = c.menuModels(def), c.pullModel
		deps.Describe = func(name string) (registry.Record, error) { return c.registry().Resolve(name) }
	})
	d.answer, d.answerOK = "acme/tiny-chat", true
	if err := m.Activate(rowPull); err != nil {
		t.Fatal(err)
	}
	rec, err := c.registry().Resolve("acme/tiny-chat")
	if err != nil {
		t.Fatalf("the pulled model does not resolve: %v", err)
	}
	if calls := d.Calls(); calls[len(calls)-1] != "notify Pulled acme/tiny-chat: generic tier (universal), "+fit.FormatBytes(rec.Bytes)+". Choose it under Models to load it." {
		t.Errorf("desktop calls %q", calls)
	}
	if row := findRow(m.View().Items, rowLoad+"acme/tiny-chat"); row.Disabled || row.ID == "" {
		t.Errorf("the pulled model's row: %+v", row)
	}
}

// cacheRepo places the files of dir as repo's main snapshot in a Hugging
// Face cache.
func cacheRepo(t *testing.T, cache, repo, dir string) {
	t.Helper()
	const commit = "0123456789abcdef0123456789abcdef01234567"
	root := filepath.Join(cache, "models--"+strings.ReplaceAll(repo, "/", "--"))
	snap := filepath.Join(root, "snapshots", commit)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(snap, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(root, "refs"), 0o755)
	if err := os.WriteFile(filepath.Join(root, "refs", "main"), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newTestHub serves dir as repo the way the Hugging Face hub does for
// Pull: the revision's file list with LFS hashes, and each file under
// /{repo}/resolve/{commit}/.
func newTestHub(t *testing.T, repo, dir string) *httptest.Server {
	t.Helper()
	const commit = "89abcdef0123456789abcdef0123456789abcdef"
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sibs []map[string]any
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
		sum := sha256.Sum256(b)
		sibs = append(sibs, map[string]any{"rfilename": e.Name(), "size": len(b),
			"lfs": map[string]any{"sha256": hex.EncodeToString(sum[:]), "size": len(b)}})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/models/"+repo+"/revision/main" {
			json.NewEncoder(w).Encode(map[string]any{"id": repo, "sha": commit, "siblings": sibs})
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, "/"+repo+"/resolve/"+commit+"/")
		b, found := files[name]
		if !ok || !found {
			w.Header().Set("X-Error-Code", "RepoNotFound")
			http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("X-Repo-Commit", commit)
		http.ServeContent(w, r, name, time.Time{}, strings.NewReader(string(b)))
	}))
	t.Cleanup(srv.Close)
	return srv
}
