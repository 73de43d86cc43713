package registry

import (
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
		return classify(dir, id, revision, refs, profiles)
	}
	key := strings.Join([]string{dir, id, revision, strings.Join(refs, ",")}, "\x00")
	m.mu.Lock()
	e, hit := m.m[key]
	m.mu.Unlock()
	if hit && e.stamp == stamp {
		return e.rec
	}
	rec := classify(dir, id, revision, refs, profiles)
	m.mu.Lock()
	if m.m == nil {
		m.m = map[string]memoEntry{}
	}
	m.m[key] = memoEntry{stamp: stamp, rec: rec}
	m.mu.Unlock()
	return rec
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
