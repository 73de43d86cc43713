package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"hearth/engine/registry/registrytest"
)

// newFakeHub serves repo with the files of a test model, as the hub has
// them: the weights in LFS, plus files Pull must not fetch.
func newFakeHub(t *testing.T, repo, model string) *registrytest.Hub {
	h := registrytest.NewHub(t, repo)
	for _, f := range modelFiles(t, model) {
		h.Files[f.name] = registrytest.File{Data: f.data, LFS: strings.HasSuffix(f.name, ".safetensors")}
	}
	h.Files["README.md"] = registrytest.File{Data: []byte("# tiny\n")}
	h.Files[".gitattributes"] = registrytest.File{Data: []byte("*.safetensors filter=lfs\n")}
	h.Files["original/consolidated.safetensors"] = registrytest.File{Data: []byte("not fetched"), LFS: true}
	h.Files["pytorch_model.bin"] = registrytest.File{Data: []byte("not fetched"), LFS: true}
	return h
}

func pullOpts(h *registrytest.Hub, cache, repo string) PullOptions {
	return PullOptions{Endpoint: h.URL, CacheDir: cache, Repo: repo, retryDelay: time.Millisecond}
}

// checkSnapshot checks the cache holds the hub's files for commit, each a
// relative symlink into blobs/ with the right bytes, and refs/main.
func checkSnapshot(t *testing.T, h *registrytest.Hub, cache string) {
	t.Helper()
	root := RepoDir(cache, h.Repo)
	if b, err := os.ReadFile(filepath.Join(root, "refs", "main")); err != nil || string(b) != h.Commit {
		t.Errorf("refs/main = %q, %v; want %s", b, err, h.Commit)
	}
	want := []string{"README.md", "config.json", "generation_config.json", "model.safetensors"}
	for _, name := range want {
		link := filepath.Join(root, "snapshots", h.Commit, name)
		target, err := os.Readlink(link)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if wantTarget := filepath.Join("..", "..", "blobs", h.Files[name].Etag()); target != wantTarget {
			t.Errorf("%s links to %q, want %q", name, target, wantTarget)
		}
		if got, err := os.ReadFile(link); err != nil || !bytes.Equal(got, h.Files[name].Data) {
			t.Errorf("%s: content differs from the hub's (%v)", name, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(root, "snapshots", h.Commit))
	if len(entries) != len(want) {
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		t.Errorf("snapshot holds %v, want %v", got, want)
	}
	blobs, _ := filepath.Glob(filepath.Join(root, "blobs", "*.incomplete"))
	if len(blobs) > 0 {
		t.Errorf("left behind %v", blobs)
	}
}

func TestPullFresh(t *testing.T) {
	h := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-f32")
	cache := t.TempDir()
	var events []Progress
	if err := Pull(context.Background(), pullOpts(h, cache, h.Repo), func(p Progress) { events = append(events, p) }); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, h, cache)
	last := events[len(events)-1]
	if events[0].Status != StatusResolving || last.Status != StatusDone || last.Completed != last.Total || last.FilesDone != 4 || last.Files != 4 || last.Commit != h.Commit {
		t.Errorf("progress went from %+v to %+v", events[0], last)
	}
	for i := 1; i < len(events); i++ {
		if events[i].Completed < events[i-1].Completed {
			t.Errorf("progress went back from %d to %d bytes", events[i-1].Completed, events[i].Completed)
		}
	}
	rec, err := New(cache).Resolve(h.Repo)
	if err != nil || rec.Tier != TierGeneric || rec.Revision != h.Commit {
		t.Errorf("Resolve after the pull = %+v, %v", rec, err)
	}
	// A second pull finds everything in place and downloads nothing.
	n := len(h.Transfers())
	if err := Pull(context.Background(), pullOpts(h, cache, h.Repo), nil); err != nil {
		t.Fatal(err)
	}
	if got := h.Transfers()[n:]; len(got) != 0 {
		t.Errorf("second pull transferred %v", got)
	}
}

func TestPullWithoutBlobInfo(t *testing.T) {
	h := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-q4g64")
	h.Blobs = false // an old mirror: etags and sizes come from HEAD
	cache := t.TempDir()
	if err := Pull(context.Background(), pullOpts(h, cache, h.Repo), nil); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, h, cache)
}

func TestPullResumesDroppedConnection(t *testing.T) {
	h := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-f32")
	half := int64(len(h.Files["model.safetensors"].Data) / 2)
	h.Drop("model.safetensors", half)
	cache := t.TempDir()
	if err := Pull(context.Background(), pullOpts(h, cache, h.Repo), nil); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, h, cache)
	want := []string{"GET model.safetensors", fmt.Sprintf("GET model.safetensors bytes=%d-", half)}
	var got []string
	for _, l := range h.Transfers() {
		if strings.HasPrefix(l, "GET model.safetensors") {
			got = append(got, l)
		}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("transfers of model.safetensors = %q, want %q", got, want)
	}
}

func TestPullResumesIncompleteBlob(t *testing.T) {
	h := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-bf16")
	cache := t.TempDir()
	f := h.Files["model.safetensors"]
	// An earlier pull (or huggingface_hub) got 1000 bytes, then stopped.
	mustWrite(t, filepath.Join(RepoDir(cache, h.Repo), "blobs", f.Etag()+".incomplete"), f.Data[:1000])
	if err := Pull(context.Background(), pullOpts(h, cache, h.Repo), nil); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, h, cache)
	found := false
	for _, l := range h.Transfers() {
		found = found || l == "GET model.safetensors bytes=1000-"
	}
	if !found {
		t.Errorf("no Range request resumed the blob; transfers: %q", h.Transfers())
	}
}

func TestPullRejectsCorruptDownload(t *testing.T) {
	h := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-f32")
	h.Corrupt("model.safetensors", true)
	cache := t.TempDir()
	err := Pull(context.Background(), pullOpts(h, cache, h.Repo), nil)
	if !errors.Is(err, errCorrupt) || !strings.Contains(err.Error(), "model.safetensors: corrupt download: sha256 is") || !strings.Contains(err.Error(), h.Files["model.safetensors"].Etag()) {
		t.Fatalf("Pull of a corrupt file = %v, want a corrupt-download error naming the file and both hashes", err)
	}
	root := RepoDir(cache, h.Repo)
	for _, p := range []string{"snapshots", "refs"} {
		if _, err := os.Stat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s exists after a failed pull", p)
		}
	}
	// Other files' partial blobs may stay for a resume; the bad one may not.
	bad := filepath.Join(root, "blobs", h.Files["model.safetensors"].Etag())
	for _, p := range []string{bad, bad + ".incomplete"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("the corrupt bytes were kept in %s", p)
		}
	}
	// Once the hub serves the right bytes, a new pull succeeds.
	h.Corrupt("model.safetensors", false)
	if err := Pull(context.Background(), pullOpts(h, cache, h.Repo), nil); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, h, cache)
}

func TestPullErrors(t *testing.T) {
	h := newFakeHub(t, "google/gated-tiny", "llama-f32")
	h.Token = "hf_secret"
	tests := []struct {
		name     string
		opt      PullOptions
		want     error
		contains string
	}{
		{"unknown repo", PullOptions{Repo: "nobody/nothing"}, ErrNotFound, "repository nobody/nothing is not on the hub"},
		{"unknown revision", PullOptions{Repo: h.Repo, Revision: "v9", Token: h.Token}, ErrNotFound, "no revision v9"},
		{"gated without a token", PullOptions{Repo: h.Repo}, ErrAuth, "set HF_TOKEN"},
		{"gated with a wrong token", PullOptions{Repo: h.Repo, Token: "hf_wrong"}, ErrAuth, "check that HF_TOKEN is valid"},
		{"bad repo id", PullOptions{Repo: "../etc"}, ErrInvalidName, "not of the form org/name"},
		{"long repo id", PullOptions{Repo: strings.Repeat("a", 100_000)}, ErrInvalidName, `aaa"… (100000 bytes) is not of the form org/name`},
		{"bad revision", PullOptions{Repo: h.Repo, Revision: "../x"}, ErrInvalidName, "not a branch, tag or commit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := t.TempDir()
			opt := tt.opt
			opt.Endpoint, opt.CacheDir, opt.retryDelay = h.URL, cache, time.Millisecond
			err := Pull(context.Background(), opt, nil)
			if err == nil || tt.want != nil && !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.contains) || len(err.Error()) > 500 {
				t.Fatalf("Pull = %.500v, want %v containing %q", err, tt.want, tt.contains)
			}
			if entries, _ := os.ReadDir(cache); len(entries) != 0 {
				t.Errorf("a refused pull wrote %d entries to the cache", len(entries))
			}
		})
	}
	cache := t.TempDir()
	opt := pullOpts(h, cache, h.Repo)
	opt.Token = h.Token
	if err := Pull(context.Background(), opt, nil); err != nil {
		t.Fatalf("gated pull with the token: %v", err)
	}
	checkSnapshot(t, h, cache)
}

func TestRemove(t *testing.T) {
	h := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-q8g32")
	cache := t.TempDir()
	if err := Pull(context.Background(), pullOpts(h, cache, h.Repo), nil); err != nil {
		t.Fatal(err)
	}
	if err := Remove(cache, h.Repo); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{RepoDir(cache, h.Repo), filepath.Join(cache, ".locks", "models--Qwen--Qwen3-Tiny")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still exists", p)
		}
	}
	if err := Remove(cache, h.Repo); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Remove = %v, want ErrNotFound", err)
	}
	if err := Remove(cache, "../x"); err == nil {
		t.Error("Remove of a bad repo id succeeded")
	}
}

func TestWantFiles(t *testing.T) {
	tests := []struct {
		names []string
		want  string
	}{
		{[]string{"config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json",
			"consolidated.safetensors", "params.json", "tokenizer.json", "tokenizer.model", "chat_template.jinja", "merges.txt",
			"README.md", "LICENSE", ".gitattributes", "pytorch_model.bin", "original/model.safetensors", "onnx/model.onnx", "model.gguf",
			"modules.json", "1_Pooling/config.json", "2_Dense/model.safetensors", "onnx/config.json", "1_Pooling/x/config.json"},
			"config.json model-00001-of-00002.safetensors model-00002-of-00002.safetensors model.safetensors.index.json params.json tokenizer.json tokenizer.model chat_template.jinja merges.txt README.md LICENSE modules.json 1_Pooling/config.json"},
		{[]string{"config.json", "weights.safetensors", "pytorch_model.bin"}, "config.json weights.safetensors"},
	}
	for _, tt := range tests {
		keep := WantFiles(tt.names)
		var got []string
		for _, n := range tt.names {
			if keep(n) {
				got = append(got, n)
			}
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("WantFiles(%v) keeps %q, want %q", tt.names, got, tt.want)
		}
	}
}

func TestBar(t *testing.T) {
	var buf bytes.Buffer
	b := NewBar(&buf)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	b.now = func() time.Time { return now }
	p := Progress{Repo: "Qwen/Qwen3-0.6B", Revision: "main", Status: StatusResolving}
	b.Update(p)
	p.Status, p.Commit, p.Total, p.Completed, p.Files = StatusDownloading, commit("c"), 1_200_000_000, 200_000_000, 5
	b.Update(p) // 200 MB were already there: not part of the rate
	now = now.Add(10 * time.Second)
	p.Completed = 500_000_000
	b.Update(p)
	now = now.Add(20 * time.Second)
	p.Completed, p.Status = p.Total, StatusDone
	b.Update(p)
	golden(t, "bar.golden", []byte(strings.ReplaceAll(buf.String(), "\r", "\n<CR>")))
}

func TestClock(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{0, "0:00"}, {59600 * time.Millisecond, "1:00"}, {3599 * time.Second, "59:59"}, {3725 * time.Second, "1:02:05"}} {
		if got := clock(tt.d); got != tt.want {
			t.Errorf("clock(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestPullHubFaults: a hub that fails, or answers what Pull cannot use,
// gives a *HubError with the hub's reason (the web answers it with a 502),
// and leaves no snapshot and no partial file.
func TestPullHubFaults(t *testing.T) {
	sibling := func(info map[string]any, name string) map[string]any {
		for _, s := range info["siblings"].([]any) {
			if m := s.(map[string]any); m["rfilename"] == name {
				return m
			}
		}
		t.Errorf("no sibling %s", name) // on the hub's goroutine: no Fatal
		return map[string]any{"lfs": map[string]any{}}
	}
	tests := []struct {
		name     string
		fault    func(h *registrytest.Hub)
		contains string
	}{
		{"bad commit", func(h *registrytest.Hub) {
			h.EditInfo(func(info map[string]any) { info["sha"] = "not-a-commit" })
		}, `sha "not-a-commit" is not a 40-digit commit hash`},
		{"bad file name", func(h *registrytest.Hub) {
			h.EditInfo(func(info map[string]any) {
				info["siblings"] = append(info["siblings"].([]any), map[string]any{"rfilename": "../../etc/passwd"})
			})
		}, `file name "../../etc/passwd" is not a relative path inside the repo`},
		{"bad size", func(h *registrytest.Hub) {
			h.EditInfo(func(info map[string]any) { sibling(info, "config.json")["size"] = -1 })
		}, `file "config.json" has blob id`},
		{"bad LFS hash", func(h *registrytest.Hub) {
			h.EditInfo(func(info map[string]any) {
				sibling(info, "model.safetensors")["lfs"].(map[string]any)["sha256"] = "../x"
			})
		}, `file "model.safetensors" has LFS sha256 "../x"`},
		{"size smaller than the file", func(h *registrytest.Hub) {
			h.EditInfo(func(info map[string]any) { sibling(info, "config.json")["size"] = 3 })
		}, "config.json: the hub sent more than the 3 bytes it announced"},
		{"sha256 mismatch", func(h *registrytest.Hub) { h.Corrupt("model.safetensors", true) },
			"model.safetensors: corrupt download: sha256 is"},
		{"git sha1 mismatch", func(h *registrytest.Hub) { h.Corrupt("config.json", true) },
			"config.json: corrupt download: git sha1 is"},
		{"another commit in the headers", func(h *registrytest.Hub) {
			h.Blobs = false
			h.Header("config.json", "X-Repo-Commit", commit("d"))
		}, "config.json: the hub served commit \"" + commit("d") + "\", not " + commit("c")},
		{"size not a number", func(h *registrytest.Hub) {
			h.Blobs = false
			h.Header("model.safetensors", "X-Linked-Size", "12abc")
		}, `model.safetensors: X-Linked-Size "12abc" is not a number`},
		{"etag that is a path", func(h *registrytest.Hub) {
			h.Blobs = false
			h.Header("model.safetensors", "X-Linked-Etag", `"../../refs/main"`)
		}, `model.safetensors: the hub gave no usable ETag and size (etag "../../refs/main"`},
		{"hub down", func(h *registrytest.Hub) { h.Fail(http.StatusServiceUnavailable, "down for maintenance") },
			"the hub answered 503 Service Unavailable for main: down for maintenance"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-f32")
			tt.fault(h)
			cache := t.TempDir()
			err := Pull(context.Background(), pullOpts(h, cache, h.Repo), nil)
			var he *HubError
			if !errors.As(err, &he) || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("Pull = %v, want a *HubError containing %q", err, tt.contains)
			}
			root := RepoDir(cache, h.Repo)
			for _, p := range []string{"snapshots", "refs"} {
				if _, err := os.Stat(filepath.Join(root, p)); !os.IsNotExist(err) {
					t.Errorf("%s exists after a failed pull", p)
				}
			}
			if inc, _ := filepath.Glob(filepath.Join(root, "blobs", "*.incomplete")); len(inc) > 0 {
				t.Errorf("a failed pull left %v", inc)
			}
		})
	}
	// The hub unreachable (TestPullOffline has more).
	h := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-f32")
	opt := pullOpts(h, t.TempDir(), h.Repo)
	opt.Endpoint = "http://127.0.0.1:1"
	var he *HubError
	if err := Pull(context.Background(), opt, nil); !errors.As(err, &he) || !strings.Contains(err.Error(), "cannot reach 127.0.0.1 (offline?)") {
		t.Errorf("Pull from no hub = %v, want a *HubError", err)
	}
}

// TestPullFailureCleansUp: when one file of a pull fails, the files still
// downloading are cancelled and their partial blobs removed, and the
// listing says the pull failed verification (not that it was interrupted)
// and what to do. The next pull fetches the model and forgets the failure.
func TestPullFailureCleansUp(t *testing.T) {
	h := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-f32")
	stalled := h.Stall("config.json", 10) // mid-transfer when the other file fails
	h.Hold("model.safetensors", stalled)
	h.Corrupt("model.safetensors", true)
	cache := t.TempDir()
	err := Pull(context.Background(), pullOpts(h, cache, h.Repo), nil)
	if !errors.Is(err, errCorrupt) {
		t.Fatalf("Pull = %v, want a corrupt download", err)
	}
	root := RepoDir(cache, h.Repo)
	if inc, _ := filepath.Glob(filepath.Join(root, "blobs", "*.incomplete")); len(inc) > 0 {
		t.Errorf("the failed pull left %v", inc)
	}
	reg := New(cache)
	recs, err := reg.List()
	if err != nil || len(recs) != 1 {
		t.Fatalf("List = %+v, %v", recs, err)
	}
	want := `no snapshots: the last pull failed verification ("model.safetensors" did not match the hub's hash, and was deleted); run hearth pull Qwen/Qwen3-Tiny again to download it afresh`
	if recs[0].Reason != want || recs[0].Servable() {
		t.Errorf("listed as %q, want %q", recs[0].Reason, want)
	}
	if _, err := reg.Resolve(h.Repo); !errors.Is(err, ErrUnservable) || !strings.Contains(err.Error(), "failed verification") {
		t.Errorf("Resolve = %v, want the failed verification", err)
	}
	h.Clear()
	if err := Pull(context.Background(), pullOpts(h, cache, h.Repo), nil); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, h, cache)
	if _, err := os.Stat(filepath.Join(root, failureNote)); !os.IsNotExist(err) {
		t.Errorf("the failure note outlived a good pull: %v", err)
	}
}

// TestPullCancelKeepsPartials: a pull the caller cancels keeps its partial
// blobs, says so, is listed as interrupted with what to do, and the next
// pull resumes where it stopped.
func TestPullCancelKeepsPartials(t *testing.T) {
	h := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-f32")
	stalled := h.Stall("model.safetensors", 1000)
	cache := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	inc := filepath.Join(RepoDir(cache, h.Repo), "blobs", h.Files["model.safetensors"].Etag()+".incomplete")
	go func() {
		<-stalled
		for st, err := os.Stat(inc); err != nil || st.Size() < 1000; st, err = os.Stat(inc) {
			time.Sleep(5 * time.Millisecond) // until the 1000 bytes are written
		}
		cancel()
	}()
	err := Pull(ctx, pullOpts(h, cache, h.Repo), nil)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "pulling again resumes them") {
		t.Fatalf("Pull = %v, want a cancelled pull that says it can resume", err)
	}
	if st, err := os.Stat(inc); err != nil || st.Size() != 1000 {
		t.Fatalf("the partial blob: %v, %v; want its 1000 bytes kept", st, err)
	}
	recs, err := New(cache).List()
	if err != nil || len(recs) != 1 {
		t.Fatalf("List = %+v, %v", recs, err)
	}
	if !regexp.MustCompile(`^no snapshots: an interrupted download \(\d partial files?\); run hearth pull Qwen/Qwen3-Tiny again to resume it$`).MatchString(recs[0].Reason) {
		t.Errorf("listed as %q", recs[0].Reason)
	}
	h.Clear()
	if err := Pull(context.Background(), pullOpts(h, cache, h.Repo), nil); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, h, cache)
	if !slices.Contains(h.Transfers(), "GET model.safetensors bytes=1000-") {
		t.Errorf("the second pull did not resume: %q", h.Transfers())
	}
}

// TestDropPartials: after a failed pull, the partial blobs of its files go,
// an earlier pull's too, except one another process is writing (it holds
// the blob's lock).
func TestDropPartials(t *testing.T) {
	cache := t.TempDir()
	p := &puller{opt: PullOptions{CacheDir: cache}, repoDir: RepoDir(cache, "acme/x")}
	files := []repoFile{{Name: "a", Etag: commit("a")}, {Name: "b", Etag: commit("b")}, {Name: "c", Etag: commit("c")}}
	for _, f := range files[:2] {
		mustWrite(t, filepath.Join(p.repoDir, "blobs", f.Etag+".incomplete"), []byte("partial"))
	}
	unlock, err := lockFile(context.Background(), p.lockPath(files[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	p.dropPartials(files) // flock locks belong to an open file: this one waits like another process
	if _, err := os.Stat(filepath.Join(p.repoDir, "blobs", files[0].Etag+".incomplete")); !os.IsNotExist(err) {
		t.Errorf("a's partial blob is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(p.repoDir, "blobs", files[1].Etag+".incomplete")); err != nil && runtime.GOOS != "windows" { // lock_other.go takes no lock
		t.Errorf("b's partial blob, locked by another writer, went: %v", err)
	}
}
