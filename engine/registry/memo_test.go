package registry

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMemo: a snapshot's record is reused while its files keep their
// sizes and times, and made anew when one changes.
func TestMemo(t *testing.T) {
	cache := t.TempDir()
	snap := fakeRepo(t, cache, "acme/tiny", commit("a"), modelFiles(t, "qwen3-f32"), "main")
	reg := New(cache)
	list := func() Record {
		t.Helper()
		recs, err := reg.List()
		if err != nil || len(recs) != 1 {
			t.Fatalf("List = %v, %v", recs, err)
		}
		return recs[0]
	}
	if rec := list(); rec.ModelType != "qwen3" || !rec.Servable() {
		t.Fatalf("first listing: %+v", rec)
	}
	// The same bytes count, the same time: the memo answers (the record
	// still says qwen3 although the file now says otherwise).
	cfg := filepath.Join(snap, "config.json")
	blob, err := filepath.EvalSymlinks(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(blob)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	swapped := bytes.Replace(raw, []byte(`"qwen3"`), []byte(`"qwen9"`), 1)
	if bytes.Equal(swapped, raw) {
		t.Fatal("config.json has no \"qwen3\"")
	}
	if err := os.WriteFile(blob, swapped, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(blob, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if rec := list(); rec.ModelType != "qwen3" {
		t.Errorf("unchanged stamp: record made anew (%q)", rec.ModelType)
	}
	// A new modification time: classified again.
	later := st.ModTime().Add(time.Second)
	if err := os.Chtimes(blob, later, later); err != nil {
		t.Fatal(err)
	}
	if rec := list(); rec.ModelType != "qwen9" || rec.Servable() {
		t.Errorf("changed file: record %q servable %v, want the new unsupported qwen9", rec.ModelType, rec.Servable())
	}
}
