package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/internal/testmodels"
)

func TestHubEnv(t *testing.T) {
	home := t.TempDir()
	tokenFile := filepath.Join(home, "tok")
	if err := os.WriteFile(tokenFile, []byte("hf_fromfile\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hfHome := filepath.Join(home, "hfhome")
	if err := os.MkdirAll(hfHome, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hfHome, "token"), []byte("hf_homefile"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		want Env
	}{
		{"defaults", nil, Env{CacheDir: filepath.Join(home, ".cache/huggingface/hub"), Endpoint: DefaultEndpoint}},
		{"XDG_CACHE_HOME", map[string]string{"XDG_CACHE_HOME": "/xdg"}, Env{CacheDir: "/xdg/huggingface/hub", Endpoint: DefaultEndpoint}},
		{"HF_HOME", map[string]string{"HF_HOME": hfHome, "XDG_CACHE_HOME": "/xdg"}, Env{CacheDir: filepath.Join(hfHome, "hub"), Endpoint: DefaultEndpoint, Token: "hf_homefile"}},
		{"HF_HOME with ~", map[string]string{"HF_HOME": "~/hfhome"}, Env{CacheDir: filepath.Join(hfHome, "hub"), Endpoint: DefaultEndpoint, Token: "hf_homefile"}},
		{"HF_HUB_CACHE wins", map[string]string{"HF_HOME": "/h", "HF_HUB_CACHE": "/c", "HUGGINGFACE_HUB_CACHE": "/legacy"}, Env{CacheDir: "/c", Endpoint: DefaultEndpoint}},
		{"legacy HUGGINGFACE_HUB_CACHE", map[string]string{"HF_HOME": "/h", "HUGGINGFACE_HUB_CACHE": "/legacy"}, Env{CacheDir: "/legacy", Endpoint: DefaultEndpoint}},
		{"HF_ENDPOINT trailing slash", map[string]string{"HF_ENDPOINT": "https://hf-mirror.com/"}, Env{CacheDir: filepath.Join(home, ".cache/huggingface/hub"), Endpoint: "https://hf-mirror.com"}},
		{"HF_TOKEN wins over the file", map[string]string{"HF_HOME": hfHome, "HF_TOKEN": " hf_env "}, Env{CacheDir: filepath.Join(hfHome, "hub"), Endpoint: DefaultEndpoint, Token: "hf_env"}},
		{"HF_TOKEN_PATH", map[string]string{"HF_TOKEN_PATH": tokenFile}, Env{CacheDir: filepath.Join(home, ".cache/huggingface/hub"), Endpoint: DefaultEndpoint, Token: "hf_fromfile"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HubEnv(func(k string) string { return tt.env[k] }, home)
			if got != tt.want {
				t.Errorf("HubEnv = %+v, want %+v", got, tt.want)
			}
			if c := HubCache(func(k string) string { return tt.env[k] }, home); c != tt.want.CacheDir {
				t.Errorf("HubCache = %q, want %q", c, tt.want.CacheDir)
			}
		})
	}
}

func TestQuoteName(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes: the cut falls inside a character
	tests := []struct{ in, want string }{
		{"Qwen/Qwen3-0.6B", `"Qwen/Qwen3-0.6B"`},
		{"a\x00b", `"a\x00b"`},
		{strings.Repeat("a", 200), `"` + strings.Repeat("a", 200) + `"`},
		{strings.Repeat("a", 100_000), `"` + strings.Repeat("a", 200) + `"… (100000 bytes)`},
		{long, `"` + strings.Repeat("é", 100) + `"… (300 bytes)`},
		{strings.Repeat("\xff", 1000), `"` + strings.Repeat(`\xff`, 50) + `"… (1000 bytes)`}, // escapes count too
	}
	for _, tt := range tests {
		if got := QuoteName(tt.in); got != tt.want {
			t.Errorf("QuoteName(%.20q) = %.60q, want %.60q", tt.in, got, tt.want)
		}
	}
}

func TestParseName(t *testing.T) {
	tests := []struct{ in, repo, rev, err string }{
		{"Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B", "", ""},
		{"Qwen/Qwen3-0.6B@v1.0", "Qwen/Qwen3-0.6B", "v1.0", ""},
		{"Qwen/Qwen3-0.6B@refs/pr/1", "Qwen/Qwen3-0.6B", "refs/pr/1", ""},
		{"../etc", "", "", "not of the form org/name"},
		{"Qwen/Qwen3-0.6B@../x", "", "", `revision "../x" is not a branch, tag or commit`},
		{"Qwen/Qwen3-0.6B@", "", "", "is not a branch, tag or commit"},
		{"a/b@" + strings.Repeat("x/", 50_000), "", "", "… (100000 bytes) is not a branch"},
	}
	for _, tt := range tests {
		repo, rev, err := ParseName(tt.in)
		if tt.err == "" && (err != nil || repo != tt.repo || rev != tt.rev) {
			t.Errorf("ParseName(%q) = %q, %q, %v; want %q, %q", tt.in, repo, rev, err, tt.repo, tt.rev)
		}
		if tt.err != "" && (!errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("ParseName(%.30q) error %v, want ErrInvalidName containing %q", tt.in, err, tt.err)
		}
	}
}

func TestCheckRepoID(t *testing.T) {
	for _, ok := range []string{"Qwen/Qwen3-0.6B", "mlx-community/Llama-3.2-1B-Instruct-4bit", "gpt2", "a_b/c.d"} {
		if err := CheckRepoID(ok); err != nil {
			t.Errorf("CheckRepoID(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "/x", "x/", "a/b/c", "../x", "a/..", "a--b/c", "a/b c", "a/b\\c", "a/b?", strings.Repeat("a", 100_000)} {
		err := CheckRepoID(bad)
		if !errors.Is(err, ErrInvalidName) {
			t.Errorf("CheckRepoID(%.20q) = %v, want ErrInvalidName", bad, err)
		}
		if err != nil && len(err.Error()) > 300 {
			t.Errorf("CheckRepoID(%.20q): a %d-byte message", bad, len(err.Error()))
		}
	}
}

// cacheFile is one file of a fake snapshot.
type cacheFile struct {
	name string
	data []byte
}

// modelFiles reads the config and weights of a testdata model.
func modelFiles(t *testing.T, name string) []cacheFile {
	t.Helper()
	var out []cacheFile
	for _, f := range []string{"config.json", "generation_config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(testmodels.Root(), name, f))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, cacheFile{f, b})
	}
	return out
}

// fakeRepo writes repo's snapshot at commit into cache the way
// huggingface_hub does: each file's bytes in blobs/<sha256>, the snapshot
// file a relative symlink to it, and refs/<ref> holding the commit. It
// returns the snapshot directory.
func fakeRepo(t *testing.T, cache, repo, commit string, files []cacheFile, refs ...string) string {
	t.Helper()
	root := RepoDir(cache, repo)
	snap := filepath.Join(root, "snapshots", commit)
	for _, f := range files {
		sum := sha256.Sum256(f.data)
		etag := hex.EncodeToString(sum[:])
		blob := filepath.Join(root, "blobs", etag)
		mustWrite(t, blob, f.data)
		link := filepath.Join(snap, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(filepath.Dir(link), blob)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(rel, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, ref := range refs {
		mustWrite(t, filepath.Join(root, "refs", filepath.FromSlash(ref)), []byte(commit))
	}
	return snap
}

func mustWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// commit makes a 40-hex-digit commit id from a seed letter.
func commit(seed string) string { return strings.Repeat(seed, 40)[:40] }

// replaceFile returns files with name's data replaced.
func replaceFile(files []cacheFile, name string, data []byte) []cacheFile {
	out := append([]cacheFile(nil), files...)
	for i := range out {
		if out[i].name == name {
			out[i].data = data
		}
	}
	return out
}

// dropFile returns files without name.
func dropFile(files []cacheFile, name string) []cacheFile {
	var out []cacheFile
	for _, f := range files {
		if f.name != name {
			out = append(out, f)
		}
	}
	return out
}
