package registry

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"hearth/internal/testmodels"
)

// TestAliases: Copy names a model a second way; the alias resolves
// wherever a name does, is refused where it would hide a model, survives
// a new Registry over the same file, and goes with its repo.
func TestAliases(t *testing.T) {
	cache := t.TempDir()
	fakeRepo(t, cache, "Qwen/Qwen3-Tiny", commit("a"), modelFiles(t, "qwen3-f32"), "main")
	fakeRepo(t, cache, "meta-llama/Llama-Tiny", commit("d"), modelFiles(t, "llama-f32"), "main")
	local := filepath.Join(testmodels.Root(), "qwen3-f32")
	file := filepath.Join(t.TempDir(), "hearth", "aliases.json")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	r := New(cache, local).WithBuiltin(Builtin{ID: "hearth/starter", Dir: filepath.Join(testmodels.Root(), "llama-f32")}).WithAliases(file)

	for _, tc := range []struct{ source, dest string }{
		{"Qwen/Qwen3-Tiny", "my-qwen"},
		{"Llama-Tiny", "team/llama:v2"}, // a short name as the source
		{"hearth/starter", "starter-copy"},
		{"my-qwen", "qwen-again"}, // an alias as the source: the model it names
	} {
		if _, err := r.Copy(tc.source, tc.dest); err != nil {
			t.Fatalf("Copy(%q, %q): %v", tc.source, tc.dest, err)
		}
	}
	r2 := New(cache, local).WithBuiltin(Builtin{ID: "hearth/starter", Dir: filepath.Join(testmodels.Root(), "llama-f32")}).WithAliases(file)
	for name, want := range map[string]string{"my-qwen": "Qwen/Qwen3-Tiny", "team/llama:v2": "meta-llama/Llama-Tiny", "starter-copy": "hearth/starter", "qwen-again": "Qwen/Qwen3-Tiny"} {
		rec, err := r2.ResolveName(name)
		if err != nil || rec.Name() != want {
			t.Errorf("ResolveName(%q) = %q, %v; want %q", name, rec.Name(), err, want)
		}
	}
	list, err := r2.Aliases()
	if err != nil || len(list) != 4 || list[0].Name != "my-qwen" || list[0].Target != "Qwen/Qwen3-Tiny" {
		t.Errorf("Aliases() = %+v, %v", list, err)
	}

	for _, tc := range []struct {
		source, dest string
		want         error
	}{
		{"no/such-model", "x", ErrNotFound},
		{"Qwen/Qwen3-Tiny", "meta-llama/Llama-Tiny", ErrNameTaken}, // a repo
		{"Qwen/Qwen3-Tiny", "Llama-Tiny", ErrNameTaken},            // a repo's short name
		{"Qwen/Qwen3-Tiny", "hearth/starter", ErrNameTaken},        // the built-in model
		{"Qwen/Qwen3-Tiny", "qwen3-f32", ErrNameTaken},             // a registered directory
		{"Qwen/Qwen3-Tiny", "../etc", ErrInvalidName},
		{"Qwen/Qwen3-Tiny", "/tmp/x", ErrInvalidName},
		{"Qwen/Qwen3-Tiny", "a@main", ErrInvalidName},
		{"Qwen/Qwen3-Tiny", "with space", ErrInvalidName},
		{"Qwen/Qwen3-Tiny", "", ErrInvalidName},
	} {
		if _, err := r.Copy(tc.source, tc.dest); !errors.Is(err, tc.want) {
			t.Errorf("Copy(%q, %q) = %v, want %v", tc.source, tc.dest, err, tc.want)
		}
	}
	// Copying onto an alias moves it.
	if _, err := r.Copy("Llama-Tiny", "my-qwen"); err != nil {
		t.Fatal(err)
	}
	if rec, _ := r.ResolveName("my-qwen"); rec.ID != "meta-llama/Llama-Tiny" {
		t.Errorf("my-qwen after a second copy = %q", rec.ID)
	}

	if ok, err := r.RemoveAlias("starter-copy"); !ok || err != nil {
		t.Errorf("RemoveAlias(starter-copy) = %v, %v", ok, err)
	}
	if ok, _ := r.RemoveAlias("hearth/starter"); ok {
		t.Error("RemoveAlias removed a model's own name")
	}
	if _, err := r.ResolveName("starter-copy"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a removed alias resolves: %v", err)
	}
	// Removing a repo takes its aliases along; the others stay.
	if err := r.RemoveRepo("meta-llama/Llama-Tiny"); err != nil {
		t.Fatal(err)
	}
	list, _ = r.Aliases()
	if len(list) != 1 || list[0].Name != "qwen-again" {
		t.Errorf("aliases after removing the repo = %+v, want qwen-again only", list)
	}
	if err := r.RemoveRepo("meta-llama/Llama-Tiny"); !errors.Is(err, ErrNotFound) {
		t.Errorf("RemoveRepo of a removed repo = %v, want ErrNotFound", err)
	}

	// A registry without an alias table resolves none and copies nothing.
	bare := New(cache)
	if _, err := bare.Copy("Qwen/Qwen3-Tiny", "x"); err == nil {
		t.Error("Copy without an alias table succeeded")
	}
}

// TestDigest: a snapshot's digest is its commit; a local directory's is a
// sha256 that changes when a file does.
func TestDigest(t *testing.T) {
	cache := t.TempDir()
	fakeRepo(t, cache, "Qwen/Qwen3-Tiny", commit("a"), modelFiles(t, "qwen3-f32"), "main")
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(testmodels.Root(), "qwen3-f32"))); err != nil {
		t.Fatal(err)
	}
	r := New(cache, dir)
	recs, err := r.List()
	if err != nil || len(recs) != 2 {
		t.Fatalf("List() = %+v, %v", recs, err)
	}
	snap, dirRec := recs[0], recs[1]
	if snap.Revision == "" {
		snap, dirRec = dirRec, snap
	}
	if snap.Digest != commit("a") || DirDigest(snap.Dir) != snap.Digest {
		t.Errorf("snapshot digest = %q, want its commit", snap.Digest)
	}
	local := dirRec.Digest
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(local) || DirDigest(dir) != local {
		t.Errorf("local digest = %q, DirDigest = %q", local, DirDigest(dir))
	}
	if err := os.WriteFile(filepath.Join(dir, "extra.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if DirDigest(dir) == local {
		t.Error("the digest did not change with the directory's files")
	}
}
