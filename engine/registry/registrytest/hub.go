// Package registrytest is a stand-in for the Hugging Face hub, for tests of
// code that pulls (registry.Pull and what calls it): it serves one repo the
// way huggingface.co does, and on request answers as a broken or hostile
// hub would.
package registrytest

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// File is one file of the repo.
type File struct {
	Data []byte
	LFS  bool // stored in LFS: the hub gives its sha256 and redirects to a CDN
}

// Etag is the hash the hub gives for f: the sha256 of an LFS file, the git
// blob sha1 of a small one.
func (f File) Etag() string {
	if f.LFS {
		s := sha256.Sum256(f.Data)
		return hex.EncodeToString(s[:])
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(f.Data))
	h.Write(f.Data)
	return hex.EncodeToString(h.Sum(nil))
}

// Hub answers like huggingface.co for one repo: the revision API
// (/api/models/{repo}/revision/{rev}), the resolve URLs (LFS files
// redirect to a CDN path, as the hub does), and auth for a gated repo.
// Set its fields before the first pull; the fault methods may be called
// at any time.
type Hub struct {
	URL    string
	Repo   string
	Commit string          // what every revision resolves to
	Files  map[string]File // the repo's files by name
	Token  string          // when set, the repo is gated and needs it
	Blobs  bool            // the revision info carries sizes and hashes (default true)

	t       testing.TB
	mu      sync.Mutex
	drop    map[string]int64 // file → bytes after which the next transfer breaks off
	corrupt map[string]bool  // file → serve it with a flipped byte
	stall   map[string]stall
	hold    map[string]<-chan struct{}
	header  map[string]http.Header // file → headers that override the usual ones
	edit    func(info map[string]any)
	status  int // when set, the revision API answers it
	log     []string
	done    chan struct{} // closed when the hub shuts down
}

type stall struct {
	after int64
	sent  chan struct{}
	once  *sync.Once
}

// NewHub starts a hub for repo with no files; it stops when the test ends.
func NewHub(t testing.TB, repo string) *Hub {
	h := &Hub{t: t, Repo: repo, Commit: strings.Repeat("c", 40), Files: map[string]File{}, Blobs: true,
		drop: map[string]int64{}, corrupt: map[string]bool{}, stall: map[string]stall{},
		hold: map[string]<-chan struct{}{}, header: map[string]http.Header{}, done: make(chan struct{})}
	srv := httptest.NewServer(h)
	h.URL = srv.URL
	t.Cleanup(func() {
		close(h.done)
		srv.Close()
	})
	return h
}

// Drop makes the next full transfer of name break off after n bytes.
func (h *Hub) Drop(name string, n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drop[name] = n
}

// Corrupt makes the hub serve name with one byte flipped (or, with false,
// as it is again).
func (h *Hub) Corrupt(name string, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.corrupt[name] = on
}

// Stall makes transfers of name send n bytes and then nothing until the
// client leaves. The channel closes once the first n bytes are sent.
func (h *Hub) Stall(name string, n int64) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := stall{after: n, sent: make(chan struct{}), once: &sync.Once{}}
	h.stall[name] = s
	return s.sent
}

// Hold makes transfers of name wait until until is closed.
func (h *Hub) Hold(name string, until <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.hold[name] = until
}

// Header makes the answers for name (its HEAD, its GET, and an LFS file's
// redirect) carry key: value instead of the usual header.
func (h *Hub) Header(name, key, value string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.header[name] == nil {
		h.header[name] = http.Header{}
	}
	h.header[name].Set(key, value)
}

// EditInfo makes the revision API pass its answer (with "sha" and
// "siblings", each sibling a map) through edit before sending it.
func (h *Hub) EditInfo(edit func(info map[string]any)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.edit = edit
}

// Fail makes the revision API answer status with msg as the hub's
// X-Error-Message.
func (h *Hub) Fail(status int, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.status = status
	h.header[""] = http.Header{"X-Error-Message": {msg}}
}

// Clear ends every fault: the hub serves the repo as it is again.
func (h *Hub) Clear() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.drop)
	clear(h.corrupt)
	clear(h.stall)
	clear(h.hold)
	clear(h.header)
	h.edit, h.status = nil, 0
}

// Transfers lists "GET <file> <range>" for each file transfer so far.
func (h *Hub) Transfers() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.log...)
}

func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	f, ok := h.Files[name]
	if !ok || rev != h.Commit {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "entry not found", http.StatusNotFound)
		return
	}
	w.Header().Set("X-Repo-Commit", h.Commit)
	if f.LFS {
		w.Header().Set("X-Linked-Etag", `"`+f.Etag()+`"`)
		w.Header().Set("X-Linked-Size", fmt.Sprint(len(f.Data)))
		h.override(w, name)
		// The hub redirects to its CDN with an absolute URL.
		http.Redirect(w, r, "http://"+r.Host+"/cdn/"+name, http.StatusFound)
		return
	}
	h.serveFile(w, r, name)
}

func (h *Hub) override(w http.ResponseWriter, name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, v := range h.header[name] {
		w.Header()[k] = v
	}
}

// refuse answers for a repo that is not this one, or gated without the token.
func (h *Hub) refuse(w http.ResponseWriter, r *http.Request, repo string) bool {
	if repo != h.Repo {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
		return true
	}
	if h.Token != "" && r.Header.Get("Authorization") != "Bearer "+h.Token {
		w.Header().Set("X-Error-Code", "GatedRepo")
		w.Header().Set("X-Error-Message", "Access to model "+repo+" is restricted.")
		http.Error(w, "gated", http.StatusUnauthorized)
		return true
	}
	return false
}

func (h *Hub) revision(w http.ResponseWriter, rev string) {
	h.mu.Lock()
	status, edit := h.status, h.edit
	h.mu.Unlock()
	if status != 0 {
		h.override(w, "")
		http.Error(w, `{"error":"the hub is down"}`, status)
		return
	}
	if rev != "main" && rev != h.Commit {
		w.Header().Set("X-Error-Code", "RevisionNotFound")
		http.Error(w, "revision not found", http.StatusNotFound)
		return
	}
	var sibs []any
	for name, f := range h.Files {
		s := map[string]any{"rfilename": name}
		if h.Blobs {
			s["size"] = len(f.Data)
			if f.LFS {
				s["blobId"] = strings.Repeat("9", 40)
				s["lfs"] = map[string]any{"sha256": f.Etag(), "size": len(f.Data), "pointerSize": 134}
			} else {
				s["blobId"] = f.Etag()
			}
		}
		sibs = append(sibs, s)
	}
	info := map[string]any{"id": h.Repo, "sha": h.Commit, "siblings": sibs}
	if edit != nil {
		edit(info)
	}
	json.NewEncoder(w).Encode(info)
}

func (h *Hub) serveFile(w http.ResponseWriter, r *http.Request, name string) {
	f := h.Files[name]
	h.mu.Lock()
	if r.Method == http.MethodGet {
		h.log = append(h.log, strings.TrimSpace("GET "+name+" "+r.Header.Get("Range")))
	}
	cut, drop := h.drop[name]
	delete(h.drop, name)
	st, stalls := h.stall[name]
	hold := h.hold[name]
	data := f.Data
	if h.corrupt[name] {
		data = bytes.Clone(data)
		data[len(data)/2] ^= 0xff
	}
	h.mu.Unlock()
	if hold != nil && r.Method == http.MethodGet {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		}
	}
	if !f.LFS {
		w.Header().Set("ETag", `"`+f.Etag()+`"`)
	}
	h.override(w, name)
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
	if stalls && r.Method == http.MethodGet {
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:st.after])
		http.NewResponseController(w).Flush()
		st.once.Do(func() { close(st.sent) })
		select {
		case <-r.Context().Done():
		case <-h.done:
		}
		return
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}
