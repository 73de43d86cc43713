package registry

import (
	"crypto/sha256"
	"encoding/hex"
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

func TestCheckRepoID(t *testing.T) {
	for _, ok := range []string{"Qwen/Qwen3-0.6B", "mlx-community/Llama-3.2-1B-Instruct-4bit", "gpt2", "a_b/c.d"} {
		if err := CheckRepoID(ok); err != nil {
			t.Errorf("CheckRepoID(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "/x", "x/", "a/b/c", "../x", "a/..", "a--b/c", "a/b c", "a/b\\c", "a/b?"} {
		if err := CheckRepoID(bad); err == nil {
			t.Errorf("CheckRepoID(%q) = nil, want an error", bad)
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
