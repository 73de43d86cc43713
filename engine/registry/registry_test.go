package registry

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/engine/family"
	"hearth/internal/testmodels"
)

// editConfig returns files with config.json changed by edit.
func editConfig(t *testing.T, files []cacheFile, edit func(map[string]any)) []cacheFile {
	t.Helper()
	for _, f := range files {
		if f.name != "config.json" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(f.data, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return replaceFile(files, "config.json", b)
	}
	t.Fatal("no config.json")
	return nil
}

// buildCache makes a fake Hugging Face cache with good, broken and
// drafter repos, as huggingface_hub would have left them.
func buildCache(t *testing.T) string {
	t.Helper()
	cache := t.TempDir()
	fakeRepo(t, cache, "Qwen/Qwen3-Tiny", commit("a"), modelFiles(t, "qwen3-f32"), "main")
	fakeRepo(t, cache, "Qwen/Qwen3-Tiny", commit("b"), modelFiles(t, "qwen3-bf16"), "v1")
	fakeRepo(t, cache, "Qwen/Qwen3-Tiny", commit("0"), modelFiles(t, "qwen3-bf16")) // an old revision no ref names
	fakeRepo(t, cache, "mlx-community/Qwen3-Tiny-4bit", commit("c"), modelFiles(t, "qwen3-q4g64"), "main")
	fakeRepo(t, cache, "meta-llama/Llama-Tiny", commit("d"), modelFiles(t, "llama-q8g32"), "main")
	fakeRepo(t, cache, "mistralai/Mistral-Tiny", commit("e"), modelFiles(t, "mistral-bf16"), "main")
	fakeRepo(t, cache, "someone/Mistral-Tiny", commit("f"), modelFiles(t, "mistral-f32"), "main")
	fakeRepo(t, cache, "acme/Made-Up", commit("1"), editConfig(t, modelFiles(t, "qwen3-f32"), func(m map[string]any) { m["model_type"] = "rwkv99" }), "main")
	qwen2 := modelFiles(t, "qwen2-f32")
	for _, f := range qwen2 {
		if f.name == "model.safetensors" {
			fakeRepo(t, cache, "acme/Truncated", commit("2"), replaceFile(qwen2, f.name, f.data[:len(f.data)/2]), "main")
		}
	}
	fakeRepo(t, cache, "acme/No-Config", commit("3"), dropFile(modelFiles(t, "llama-f32"), "config.json"), "main")
	snap := fakeRepo(t, cache, "acme/Interrupted", commit("4"), modelFiles(t, "llama-bf16"), "main")
	blob, err := filepath.EvalSymlinks(filepath.Join(snap, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(blob, blob+".incomplete"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(RepoDir(cache, "acme/Empty"), "blobs", "deadbeef.incomplete"), []byte("x"))
	fakeRepo(t, cache, "acme/Tiny_assistant", commit("5"), modelFiles(t, "llama-f32"), "main")
	fakeRepo(t, cache, "acme/Eagle-Head", commit("6"), editConfig(t, modelFiles(t, "llama-f32"), func(m map[string]any) { m["draft_vocab_size"] = 256 }), "main")
	fakeRepo(t, cache, "acme/GPTQ", commit("7"), editConfig(t, modelFiles(t, "qwen3-f32"), func(m map[string]any) {
		m["quantization_config"] = map[string]any{"quant_method": "gptq", "bits": 4}
	}), "main")
	fakeRepo(t, cache, "acme/Not-JSON", commit("8"), replaceFile(modelFiles(t, "llama-f32"), "config.json", []byte("{\"model_type\": ")), "main")
	// Not model repos: huggingface_hub keeps them beside the models.
	mustWrite(t, filepath.Join(cache, "datasets--acme--data", "refs", "main"), []byte(commit("9")))
	mustWrite(t, filepath.Join(cache, ".locks", "models--Qwen--Qwen3-Tiny", "x.lock"), nil)
	mustWrite(t, filepath.Join(cache, "version.txt"), []byte("1"))
	return cache
}

func TestList(t *testing.T) {
	cache := buildCache(t)
	local := filepath.Join(testmodels.Root(), "chat-tiny")
	recs, err := New(cache, local).List()
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		tier, family, quant, reason string
		drafter                     bool
		refs                        string
	}
	wants := map[string]want{
		"Qwen/Qwen3-Tiny":                             {tier: "generic", family: "universal", quant: "f32", refs: "main"},
		"Qwen/Qwen3-Tiny@v1":                          {tier: "generic", family: "universal", quant: "bf16", refs: "v1"},
		"Qwen/Qwen3-Tiny@000000000000":                {tier: "generic", family: "universal", quant: "bf16"},
		"mlx-community/Qwen3-Tiny-4bit":               {tier: "generic", family: "universal", quant: "q4g64", refs: "main"},
		"meta-llama/Llama-Tiny":                       {tier: "generic", family: "universal", quant: "q8g32", refs: "main"},
		"mistralai/Mistral-Tiny":                      {tier: "generic", family: "universal", quant: "bf16", refs: "main"},
		"someone/Mistral-Tiny":                        {tier: "generic", family: "universal", quant: "f32", refs: "main"},
		"acme/Made-Up":                                {tier: "unsupported", quant: "f32", reason: `unsupported model_type "rwkv99" (supported: `, refs: "main"},
		"acme/Truncated":                              {tier: "unsupported", family: "universal", quant: "f32", reason: "incomplete download", refs: "main"},
		"acme/No-Config":                              {tier: "unsupported", reason: "no config.json", refs: "main"},
		"acme/Interrupted":                            {tier: "unsupported", family: "universal", quant: "bf16", reason: "model.safetensors", refs: "main"},
		"acme/Empty":                                  {tier: "unsupported", reason: "no snapshots: an interrupted download (1 partial file); run hearth pull acme/Empty again to resume it"},
		"acme/Tiny_assistant":                         {tier: "generic", family: "universal", quant: "f32", drafter: true, refs: "main"},
		"acme/Eagle-Head":                             {tier: "generic", family: "universal", quant: "f32", drafter: true, refs: "main"},
		"acme/GPTQ":                                   {tier: "unsupported", family: "universal", quant: "gptq", reason: "not MLX affine quantization", refs: "main"},
		"acme/Not-JSON":                               {tier: "unsupported", reason: "config.json: not a JSON object", refs: "main"},
		filepath.Join(testmodels.Root(), "chat-tiny"): {tier: "generic", family: "universal", quant: "q4g64"},
	}
	got := map[string]Record{}
	for _, r := range recs {
		if _, dup := got[r.Name()]; dup {
			t.Errorf("List has %s twice", r.Name())
		}
		got[r.Name()] = r
	}
	for name, w := range wants {
		r, ok := got[name]
		if !ok {
			t.Errorf("List lacks %s", name)
			continue
		}
		if r.Tier != w.tier || r.Family != w.family || r.Quantization != w.quant || r.Drafter != w.drafter || strings.Join(r.Refs, ",") != w.refs {
			t.Errorf("%s: tier %q family %q quant %q drafter %v refs %v, want %q %q %q %v %q",
				name, r.Tier, r.Family, r.Quantization, r.Drafter, r.Refs, w.tier, w.family, w.quant, w.drafter, w.refs)
		}
		if w.reason == "" && r.Reason != "" || !strings.Contains(r.Reason, w.reason) {
			t.Errorf("%s: reason %q, want one containing %q", name, r.Reason, w.reason)
		}
		if w.tier != "unsupported" && (r.Params <= 0 || r.Bytes <= 0 || r.ContextTokens != 256 || r.Shape.WeightBytes != r.Bytes) {
			t.Errorf("%s: params %d bytes %d context %d shape bytes %d, want positive sizes and context 256", name, r.Params, r.Bytes, r.ContextTokens, r.Shape.WeightBytes)
		}
		if w.tier != "unsupported" && r.Profile.Source != SourceGeneric {
			t.Errorf("%s: profile %+v, want the generic one", name, r.Profile)
		}
	}
	for name := range got {
		if _, ok := wants[name]; !ok {
			t.Errorf("List has unexpected %s", name)
		}
	}
	for i := 1; i < len(recs); i++ {
		if recs[i-1].Name() > recs[i].Name() {
			t.Errorf("List is not sorted: %s before %s", recs[i-1].Name(), recs[i].Name())
		}
	}
}

func TestListMissingCache(t *testing.T) {
	recs, err := New(filepath.Join(t.TempDir(), "nope")).List()
	if err != nil || len(recs) != 0 {
		t.Errorf("List of a missing cache = %v, %v; want nothing and no error", recs, err)
	}
}

func TestResolve(t *testing.T) {
	cache := buildCache(t)
	local := filepath.Join(testmodels.Root(), "chat-tiny")
	reg := New(cache, local)
	tests := []struct {
		name     string
		in       string
		wantID   string
		wantRev  string
		wantErr  error  // errors.Is target; nil for success
		contains string // in the error message
	}{
		{"repo", "Qwen/Qwen3-Tiny", "Qwen/Qwen3-Tiny", commit("a"), nil, ""},
		{"repo at ref", "Qwen/Qwen3-Tiny@v1", "Qwen/Qwen3-Tiny", commit("b"), nil, ""},
		{"repo at main", "Qwen/Qwen3-Tiny@main", "Qwen/Qwen3-Tiny", commit("a"), nil, ""},
		{"repo at full commit", "Qwen/Qwen3-Tiny@" + commit("0"), "Qwen/Qwen3-Tiny", commit("0"), nil, ""},
		{"repo at short commit", "Qwen/Qwen3-Tiny@bbbbbbb", "Qwen/Qwen3-Tiny", commit("b"), nil, ""},
		{"unknown revision", "Qwen/Qwen3-Tiny@v9", "", "", ErrNotFound, "Qwen/Qwen3-Tiny@v1"},
		{"short name", "Qwen3-Tiny", "Qwen/Qwen3-Tiny", commit("a"), nil, ""},
		{"short name any case", "qwen3-tiny-4BIT", "mlx-community/Qwen3-Tiny-4bit", commit("c"), nil, ""},
		{"short name at ref", "Qwen3-Tiny@v1", "Qwen/Qwen3-Tiny", commit("b"), nil, ""},
		{"ambiguous short name", "Mistral-Tiny", "", "", ErrAmbiguous, "mistralai/Mistral-Tiny, someone/Mistral-Tiny"},
		{"typo", "Qwen/Qwen3-Tiy", "", "", ErrNotFound, "did you mean Qwen/Qwen3-Tiny"},
		{"unknown", "nobody/nothing-like-it", "", "", ErrNotFound, "hearth pull"},
		{"drafter by name", "acme/Tiny_assistant", "acme/Tiny_assistant", commit("5"), ErrDrafter, "speculative decoding"},
		{"drafter by config", "Eagle-Head", "acme/Eagle-Head", commit("6"), ErrDrafter, ""},
		{"unsupported model_type", "acme/Made-Up", "acme/Made-Up", commit("1"), family.ErrUnsupported, `"rwkv99"`},
		{"truncated", "acme/Truncated", "acme/Truncated", commit("2"), errAny, "incomplete download"},
		{"empty repo", "acme/Empty", "acme/Empty", "", ErrUnservable, "run hearth pull acme/Empty again to resume it"},
		{"registered local by base name", "chat-tiny", local, "", nil, ""},
		{"local path", local, local, "", nil, ""},
		{"unregistered local path", filepath.Join(testmodels.Root(), "llama-f32"), filepath.Join(testmodels.Root(), "llama-f32"), "", nil, ""},
		{"path that is no directory", filepath.Join(testmodels.Root(), "nope"), "", "", ErrNotFound, "not a directory"},
		{"empty name", " ", "", "", ErrNotFound, "no model name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := reg.Resolve(tt.in)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Resolve(%q) error %v", tt.in, err)
			case tt.wantErr == errAny && err == nil, tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("Resolve(%q) error %v, want %v", tt.in, err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("Resolve(%q) error %q, want it to contain %q", tt.in, err, tt.contains)
			}
			if rec.ID != tt.wantID || rec.Revision != tt.wantRev {
				t.Errorf("Resolve(%q) = %s@%s, want %s@%s", tt.in, rec.ID, rec.Revision, tt.wantID, tt.wantRev)
			}
			if err == nil && !rec.Servable() {
				t.Errorf("Resolve(%q) succeeded with an unservable record %+v", tt.in, rec)
			}
		})
	}
}

// errAny stands for "some error" in a test table.
var errAny = errors.New("any error")

func TestResolveRelativePath(t *testing.T) {
	t.Chdir(testmodels.Root())
	reg := New(t.TempDir())
	for _, in := range []string{"./qwen3-f32", "qwen3-f32"} {
		rec, err := reg.Resolve(in)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", in, err)
		}
		if want := filepath.Join(testmodels.Root(), "qwen3-f32"); rec.ID != want || rec.Dir != want {
			t.Errorf("Resolve(%q) = %q in %q, want %q", in, rec.ID, rec.Dir, want)
		}
	}
}

func TestRecordName(t *testing.T) {
	tests := []struct {
		rec  Record
		want string
	}{
		{Record{ID: "a/b", Revision: commit("a"), Refs: []string{"main", "v1"}}, "a/b"},
		{Record{ID: "a/b", Revision: commit("a"), Refs: []string{"v1"}}, "a/b@v1"},
		{Record{ID: "a/b", Revision: commit("a")}, "a/b@aaaaaaaaaaaa"},
		{Record{ID: "/models/x"}, "/models/x"},
	}
	for _, tt := range tests {
		if got := tt.rec.Name(); got != tt.want {
			t.Errorf("%+v.Name() = %q, want %q", tt.rec, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"Qwen/Qwen3-0.6B", "Qwen/Qwen3-8B", "mlx-community/Qwen3-0.6B-4bit", "meta-llama/Llama-3.2-1B"}
	tests := []struct {
		in   string
		want string
	}{
		{"Qwen3-0.6", "Qwen/Qwen3-0.6B, mlx-community/Qwen3-0.6B-4bit"},
		{"qwen/qwen3-8b", "Qwen/Qwen3-8B"},
		{"Llama-3.2-1", "meta-llama/Llama-3.2-1B"},
		{"gemma-3-1b", ""},
	}
	for _, tt := range tests {
		if got := strings.Join(closest(tt.in, names, 3), ", "); got != tt.want {
			t.Errorf("closest(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestResolveName: names from the network resolve in the cache, the
// built-in entries and the registered directories only. A path, whether
// it exists or not, is a file or a model directory, is an unknown name:
// the same error as any other, which says nothing about the disk.
func TestResolveName(t *testing.T) {
	cache := buildCache(t)
	local := filepath.Join(testmodels.Root(), "chat-tiny")
	reg := New(cache, local).WithBuiltin(Builtin{ID: "hearth/starter", Dir: filepath.Join(testmodels.Root(), "qwen3-f32")})
	for _, tt := range []struct{ in, wantID string }{
		{"Qwen/Qwen3-Tiny", "Qwen/Qwen3-Tiny"},
		{"Qwen/Qwen3-Tiny@v1", "Qwen/Qwen3-Tiny"},
		{"qwen3-tiny-4BIT", "mlx-community/Qwen3-Tiny-4bit"},
		{"hearth/starter", "hearth/starter"},
		{local, local},
		{"chat-tiny", local},
	} {
		if rec, err := reg.ResolveName(tt.in); err != nil || rec.ID != tt.wantID {
			t.Errorf("ResolveName(%q) = %q, %v; want %q", tt.in, rec.ID, err, tt.wantID)
		}
	}

	t.Chdir(testmodels.Root()) // relative names that are model directories here
	file := filepath.Join(t.TempDir(), "bashrc")
	mustWrite(t, file, []byte("x"))
	for _, in := range []string{
		"~/", "~/../etc", "~/.bashrc", "../../etc/passwd", "/etc/passwd", "/etc", "/root/.bashrc", "/", ".", "..", "./",
		file, filepath.Dir(file), filepath.Join(file, "x"),
		filepath.Join(testmodels.Root(), "llama-f32"), // a model directory that is not registered
		"./qwen3-f32", "qwen3-f32", "../testmodels/qwen3-f32", "qwen3-f32/", "qwen3-f32/.", "llama-f32@main",
		"nobody/nothing",
		strings.Repeat("x", 100_000),
	} {
		rec, err := reg.ResolveName(in)
		if !errors.Is(err, ErrNotFound) || rec.Dir != "" {
			t.Errorf("ResolveName(%.40q) = %q, %v; want ErrNotFound", in, rec.Dir, err)
			continue
		}
		if want := UnknownName(in).Error(); err.Error() != want {
			t.Errorf("ResolveName(%.40q) error\n%.300s\nwant the same as every unknown name:\n%.300s", in, err, want)
		}
	}
	// The command line still takes paths.
	if rec, err := reg.Resolve("./qwen3-f32"); err != nil || rec.Dir != filepath.Join(testmodels.Root(), "qwen3-f32") {
		t.Errorf("Resolve(./qwen3-f32) = %q, %v", rec.Dir, err)
	}
}

// TestResolveGGUFPath: a .gguf file named by a relative path ("models/
// x.gguf", as a shell completes it) is the file, not a repo id.
func TestResolveGGUFPath(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.MkdirAll("models", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("models", "x.gguf"), []byte("GGUF not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(t.TempDir()).Resolve("models/x.gguf")
	if err == nil || errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve(models/x.gguf): %v; want the file's own (format) error", err)
	}
}
