package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// memo keeps each snapshot's record while the snapshot's files stay as
// they were: classifying reads every safetensors header and renders the
// chat template, and the menu lists every few seconds.
type memo struct {
	mu sync.Mutex
	m  map[string]memoEntry
}

type memoEntry struct {
	stamp string
	rec   Record
}

// classify is the package's classify, reused while dir's files keep their
// names, sizes and modification times (links followed, as a snapshot's
// files are links to blobs).
func (m *memo) classify(dir, id, revision string, refs []string, profiles []ExactProfile) Record {
	stamp, ok := dirStamp(dir)
	if !ok {
		rec := classify(dir, id, revision, refs, profiles)
		rec.Digest = revision
		return rec
	}
	key := strings.Join([]string{dir, id, revision, strings.Join(refs, ",")}, "\x00")
	m.mu.Lock()
	e, hit := m.m[key]
	m.mu.Unlock()
	if hit && e.stamp == stamp {
		return e.rec
	}
	rec := classify(dir, id, revision, refs, profiles)
	rec.Digest = digestOf(revision, stamp)
	m.mu.Lock()
	if m.m == nil {
		m.m = map[string]memoEntry{}
	}
	m.m[key] = memoEntry{stamp: stamp, rec: rec}
	m.mu.Unlock()
	return rec
}

// digestOf is a checkpoint's digest, as /api/tags reports it (Ollama's
// clients key models on it): a hub snapshot's commit, which names its
// contents exactly and is what the hub shows; for a local directory (and
// the built-in model), which has no commit, the sha256 of its stamp: the
// files' names, sizes and modification times. Hashing the weights
// themselves would read gigabytes on every listing; the stamp changes
// whenever a file is replaced, which is what a client needs to notice.
func digestOf(revision, stamp string) string {
	if revision != "" {
		return revision
	}
	sum := sha256.Sum256([]byte(stamp))
	return hex.EncodeToString(sum[:])
}

// DirDigest is the digest of the checkpoint in dir (see digestOf): the
// commit of a snapshot in the cache, else the sha256 of the directory's
// stamp; "" when dir cannot be read. It equals the Digest of dir's Record.
func DirDigest(dir string) string {
	if parent := filepath.Dir(dir); filepath.Base(parent) == "snapshots" &&
		strings.HasPrefix(filepath.Base(filepath.Dir(parent)), repoPrefix) {
		return filepath.Base(dir)
	}
	stamp, ok := dirStamp(dir)
	if !ok {
		return ""
	}
	return digestOf("", stamp)
}

// dirStamp names dir's files with their sizes and modification times; ok
// is false when dir cannot be read (then nothing is reused).
func dirStamp(dir string) (string, bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	for _, e := range entries {
		st, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			fmt.Fprintf(&b, "%s!\n", e.Name()) // a dangling link
			continue
		}
		fmt.Fprintf(&b, "%s %d %d %v\n", e.Name(), st.Size(), st.ModTime().UnixNano(), st.IsDir())
	}
	return b.String(), true
}
