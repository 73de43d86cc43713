package registry

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// hubFile is one file a fakeHub serves.
type hubFile struct {
	data []byte
	lfs  bool
}

func (f hubFile) etag() string {
	if f.lfs {
		s := sha256.Sum256(f.data)
		return hex.EncodeToString(s[:])
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(f.data))
	h.Write(f.data)
	return hex.EncodeToString(h.Sum(nil))
}

// fakeHub answers like huggingface.co for one repo: the revision API, the
// resolve URLs (LFS files redirect to a CDN path, as the hub does), auth
// for a gated repo, and on request a dropped connection or corrupt bytes.
type fakeHub struct {
	t      *testing.T
	repo   string
	commit string
	files  map[string]hubFile
	token  string // when set, the repo is gated and needs it
	blobs  bool   // the revision info carries sizes and hashes

	mu      sync.Mutex
	drop    map[string]int64 // file → bytes after which the next transfer breaks off
	corrupt map[string]bool  // file → serve it with a flipped byte
	log     []string         // "GET <file> <range>" for each transfer
}

func newFakeHub(t *testing.T, repo, model string) (*fakeHub, *httptest.Server) {
	h := &fakeHub{t: t, repo: repo, commit: commit("c"), files: map[string]hubFile{}, blobs: true,
		drop: map[string]int64{}, corrupt: map[string]bool{}}
	for _, f := range modelFiles(t, model) {
		h.files[f.name] = hubFile{data: f.data, lfs: strings.HasSuffix(f.name, ".safetensors")}
	}
	h.files["README.md"] = hubFile{data: []byte("# tiny\n")}
	h.files[".gitattributes"] = hubFile{data: []byte("*.safetensors filter=lfs\n")}
	h.files["original/consolidated.safetensors"] = hubFile{data: []byte("not fetched"), lfs: true}
	h.files["pytorch_model.bin"] = hubFile{data: []byte("not fetched"), lfs: true}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if cdn, ok := strings.CutPrefix(r.URL.Path, "/cdn/"); ok {
		h.serveFile(w, r, cdn)
		return
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/api/models/"); ok {
		repo, rev, _ := strings.Cut(rest, "/revision/")
		if h.refuse(w, r, repo) {
			return
		}
		h.revision(w, rev)
		return
	}
	repo, rest, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/resolve/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if h.refuse(w, r, repo) {
		return
	}
	rev, name, _ := strings.Cut(rest, "/")
	f, ok := h.files[name]
	if !ok || rev != h.commit {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "entry not found", http.StatusNotFound)
		return
	}
	w.Header().Set("X-Repo-Commit", h.commit)
	if f.lfs {
		w.Header().Set("X-Linked-Etag", `"`+f.etag()+`"`)
		w.Header().Set("X-Linked-Size", fmt.Sprint(len(f.data)))
		// The hub redirects to its CDN with an absolute URL.
		http.Redirect(w, r, "http://"+r.Host+"/cdn/"+name, http.StatusFound)
		return
	}
	h.serveFile(w, r, name)
}

// refuse answers for a repo that is not this one, or gated without the token.
func (h *fakeHub) refuse(w http.ResponseWriter, r *http.Request, repo string) bool {
	if repo != h.repo {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
		return true
	}
	if h.token != "" && r.Header.Get("Authorization") != "Bearer "+h.token {
		w.Header().Set("X-Error-Code", "GatedRepo")
		w.Header().Set("X-Error-Message", "Access to model "+repo+" is restricted.")
		http.Error(w, "gated", http.StatusUnauthorized)
		return true
	}
	return false
}

func (h *fakeHub) revision(w http.ResponseWriter, rev string) {
	if rev != "main" && rev != h.commit {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, "revision not found", http.StatusNotFound)
		return
	}
	var sibs []map[string]any
	for name, f := range h.files {
		s := map[string]any{"rfilename": name}
		if h.blobs {
			s["size"] = len(f.data)
			if f.lfs {
				s["blobId"] = strings.Repeat("9", 40)
				s["lfs"] = map[string]any{"sha256": f.etag(), "size": len(f.data), "pointerSize": 134}
			} else {
				s["blobId"] = f.etag()
			}
		}
		sibs = append(sibs, s)
	}
	json.NewEncoder(w).Encode(map[string]any{"id": h.repo, "sha": h.commit, "siblings": sibs})
}

func (h *fakeHub) serveFile(w http.ResponseWriter, r *http.Request, name string) {
	f := h.files[name]
	h.mu.Lock()
	if r.Method == http.MethodGet {
		h.log = append(h.log, strings.TrimSpace("GET "+name+" "+r.Header.Get("Range")))
	}
	cut, drop := h.drop[name]
	delete(h.drop, name)
	data := f.data
	if h.corrupt[name] {
		data = bytes.Clone(data)
		data[len(data)/2] ^= 0xff
	}
	h.mu.Unlock()
	if !f.lfs {
		w.Header().Set("ETag", `"`+f.etag()+`"`)
	}
	if drop && r.Method == http.MethodGet && r.Header.Get("Range") == "" {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			h.t.Error(err)
			return
		}
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(data))
		buf.Write(data[:cut])
		buf.Flush()
		conn.Close()
		return
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

func (h *fakeHub) transfers() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.log...)
}

func pullOpts(srv *httptest.Server, cache, repo string) PullOptions {
	return PullOptions{Endpoint: srv.URL, CacheDir: cache, Repo: repo, retryDelay: time.Millisecond}
}

// checkSnapshot checks the cache holds the hub's files for commit, each a
// relative symlink into blobs/ with the right bytes, and refs/main.
func checkSnapshot(t *testing.T, h *fakeHub, cache string) {
	t.Helper()
	root := RepoDir(cache, h.repo)
	if b, err := os.ReadFile(filepath.Join(root, "refs", "main")); err != nil || string(b) != h.commit {
		t.Errorf("refs/main = %q, %v; want %s", b, err, h.commit)
	}
	want := []string{"README.md", "config.json", "generation_config.json", "model.safetensors"}
	for _, name := range want {
		link := filepath.Join(root, "snapshots", h.commit, name)
		target, err := os.Readlink(link)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if wantTarget := filepath.Join("..", "..", "blobs", h.files[name].etag()); target != wantTarget {
			t.Errorf("%s links to %q, want %q", name, target, wantTarget)
		}
		if got, err := os.ReadFile(link); err != nil || !bytes.Equal(got, h.files[name].data) {
			t.Errorf("%s: content differs from the hub's (%v)", name, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(root, "snapshots", h.commit))
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
	h, srv := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-f32")
	cache := t.TempDir()
	var events []Progress
	if err := Pull(context.Background(), pullOpts(srv, cache, h.repo), func(p Progress) { events = append(events, p) }); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, h, cache)
	last := events[len(events)-1]
	if events[0].Status != StatusResolving || last.Status != StatusDone || last.Completed != last.Total || last.FilesDone != 4 || last.Files != 4 || last.Commit != h.commit {
		t.Errorf("progress went from %+v to %+v", events[0], last)
	}
	for i := 1; i < len(events); i++ {
		if events[i].Completed < events[i-1].Completed {
			t.Errorf("progress went back from %d to %d bytes", events[i-1].Completed, events[i].Completed)
		}
	}
	rec, err := New(cache).Resolve(h.repo)
	if err != nil || rec.Tier != TierGeneric || rec.Revision != h.commit {
		t.Errorf("Resolve after the pull = %+v, %v", rec, err)
	}
	// A second pull finds everything in place and downloads nothing.
	n := len(h.transfers())
	if err := Pull(context.Background(), pullOpts(srv, cache, h.repo), nil); err != nil {
		t.Fatal(err)
	}
	if got := h.transfers()[n:]; len(got) != 0 {
		t.Errorf("second pull transferred %v", got)
	}
}

func TestPullWithoutBlobInfo(t *testing.T) {
	h, srv := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-q4g64")
	h.blobs = false // an old mirror: etags and sizes come from HEAD
	cache := t.TempDir()
	if err := Pull(context.Background(), pullOpts(srv, cache, h.repo), nil); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, h, cache)
}

func TestPullResumesDroppedConnection(t *testing.T) {
	h, srv := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-f32")
	half := int64(len(h.files["model.safetensors"].data) / 2)
	h.drop["model.safetensors"] = half
	cache := t.TempDir()
	if err := Pull(context.Background(), pullOpts(srv, cache, h.repo), nil); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, h, cache)
	want := []string{"GET model.safetensors", fmt.Sprintf("GET model.safetensors bytes=%d-", half)}
	var got []string
	for _, l := range h.transfers() {
		if strings.HasPrefix(l, "GET model.safetensors") {
			got = append(got, l)
		}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("transfers of model.safetensors = %q, want %q", got, want)
	}
}

func TestPullResumesIncompleteBlob(t *testing.T) {
	h, srv := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-bf16")
	cache := t.TempDir()
	f := h.files["model.safetensors"]
	// An earlier pull (or huggingface_hub) got 1000 bytes, then stopped.
	mustWrite(t, filepath.Join(RepoDir(cache, h.repo), "blobs", f.etag()+".incomplete"), f.data[:1000])
	if err := Pull(context.Background(), pullOpts(srv, cache, h.repo), nil); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, h, cache)
	found := false
	for _, l := range h.transfers() {
		found = found || l == "GET model.safetensors bytes=1000-"
	}
	if !found {
		t.Errorf("no Range request resumed the blob; transfers: %q", h.transfers())
	}
}

func TestPullRejectsCorruptDownload(t *testing.T) {
	h, srv := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-f32")
	h.corrupt["model.safetensors"] = true
	cache := t.TempDir()
	err := Pull(context.Background(), pullOpts(srv, cache, h.repo), nil)
	if !errors.Is(err, errCorrupt) || !strings.Contains(err.Error(), "model.safetensors: corrupt download: sha256 is") || !strings.Contains(err.Error(), h.files["model.safetensors"].etag()) {
		t.Fatalf("Pull of a corrupt file = %v, want a corrupt-download error naming the file and both hashes", err)
	}
	root := RepoDir(cache, h.repo)
	for _, p := range []string{"snapshots", "refs"} {
		if _, err := os.Stat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s exists after a failed pull", p)
		}
	}
	// Other files' partial blobs may stay for a resume; the bad one may not.
	bad := filepath.Join(root, "blobs", h.files["model.safetensors"].etag())
	for _, p := range []string{bad, bad + ".incomplete"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("the corrupt bytes were kept in %s", p)
		}
	}
	// Once the hub serves the right bytes, a new pull succeeds.
	h.corrupt["model.safetensors"] = false
	if err := Pull(context.Background(), pullOpts(srv, cache, h.repo), nil); err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, h, cache)
}

func TestPullErrors(t *testing.T) {
	h, srv := newFakeHub(t, "google/gated-tiny", "llama-f32")
	h.token = "hf_secret"
	tests := []struct {
		name     string
		opt      PullOptions
		want     error
		contains string
	}{
		{"unknown repo", PullOptions{Repo: "nobody/nothing"}, ErrNotFound, "repository nobody/nothing is not on the hub"},
		{"unknown revision", PullOptions{Repo: h.repo, Revision: "v9", Token: h.token}, ErrNotFound, "no revision v9"},
		{"gated without a token", PullOptions{Repo: h.repo}, ErrAuth, "set HF_TOKEN"},
		{"gated with a wrong token", PullOptions{Repo: h.repo, Token: "hf_wrong"}, ErrAuth, "check that HF_TOKEN is valid"},
		{"bad repo id", PullOptions{Repo: "../etc"}, nil, "not of the form org/name"},
		{"bad revision", PullOptions{Repo: h.repo, Revision: "../x"}, nil, "not a branch, tag or commit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := t.TempDir()
			opt := tt.opt
			opt.Endpoint, opt.CacheDir, opt.retryDelay = srv.URL, cache, time.Millisecond
			err := Pull(context.Background(), opt, nil)
			if err == nil || tt.want != nil && !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("Pull = %v, want %v containing %q", err, tt.want, tt.contains)
			}
			if entries, _ := os.ReadDir(cache); len(entries) != 0 {
				t.Errorf("a refused pull wrote %d entries to the cache", len(entries))
			}
		})
	}
	cache := t.TempDir()
	opt := pullOpts(srv, cache, h.repo)
	opt.Token = h.token
	if err := Pull(context.Background(), opt, nil); err != nil {
		t.Fatalf("gated pull with the token: %v", err)
	}
	checkSnapshot(t, h, cache)
}

func TestRemove(t *testing.T) {
	h, srv := newFakeHub(t, "Qwen/Qwen3-Tiny", "qwen3-q8g32")
	cache := t.TempDir()
	if err := Pull(context.Background(), pullOpts(srv, cache, h.repo), nil); err != nil {
		t.Fatal(err)
	}
	if err := Remove(cache, h.repo); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{RepoDir(cache, h.repo), filepath.Join(cache, ".locks", "models--Qwen--Qwen3-Tiny")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still exists", p)
		}
	}
	if err := Remove(cache, h.repo); !errors.Is(err, ErrNotFound) {
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
			"README.md", "LICENSE", ".gitattributes", "pytorch_model.bin", "original/model.safetensors", "onnx/model.onnx", "model.gguf"},
			"config.json model-00001-of-00002.safetensors model-00002-of-00002.safetensors model.safetensors.index.json params.json tokenizer.json tokenizer.model chat_template.jinja merges.txt README.md LICENSE"},
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
