// The Hugging Face cache layout, shared with the huggingface_hub Python
// library:
//
//	<cache>/models--<org>--<name>/
//	    blobs/<etag>                   file contents (sha256 for LFS files, git sha1 otherwise)
//	    blobs/<etag>.incomplete        a download in progress
//	    refs/<revision>                the commit hash a branch or tag points at
//	    snapshots/<commit>/<file>      relative symlinks into blobs/
//	    .hearth-pull-error.json        Hearth's own: why its last pull failed
//	                                   (huggingface_hub ignores it)

package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Env is the Hugging Face environment contract, read once by HubEnv.
type Env struct {
	CacheDir string // HF_HUB_CACHE
	Endpoint string // HF_ENDPOINT, without a trailing slash
	Token    string // HF_TOKEN, else the token file
}

// DefaultEndpoint is the hub Hearth pulls from when HF_ENDPOINT is unset.
const DefaultEndpoint = "https://huggingface.co"

// HubEnv reads the Hugging Face variables the way huggingface_hub does:
// HF_HOME (default $XDG_CACHE_HOME/huggingface, else home/.cache/huggingface),
// HF_HUB_CACHE (legacy HUGGINGFACE_HUB_CACHE; default HF_HOME/hub),
// HF_ENDPOINT, and HF_TOKEN or the token file (HF_TOKEN_PATH, default
// HF_HOME/token). It is the one place that reads them; app/ passes
// os.Getenv and the user's home directory.
func HubEnv(getenv func(string) string, home string) Env {
	expand := func(p string) string {
		if p == "~" {
			return home
		}
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			return filepath.Join(home, rest)
		}
		return p
	}
	hfHome := getenv("HF_HOME")
	if hfHome == "" {
		xdg := getenv("XDG_CACHE_HOME")
		if xdg == "" {
			xdg = filepath.Join(home, ".cache")
		}
		hfHome = filepath.Join(xdg, "huggingface")
	}
	hfHome = expand(hfHome)
	e := Env{CacheDir: getenv("HF_HUB_CACHE")}
	if e.CacheDir == "" {
		e.CacheDir = getenv("HUGGINGFACE_HUB_CACHE")
	}
	if e.CacheDir == "" {
		e.CacheDir = filepath.Join(hfHome, "hub")
	}
	e.CacheDir = expand(e.CacheDir)
	e.Endpoint = strings.TrimRight(getenv("HF_ENDPOINT"), "/")
	if e.Endpoint == "" {
		e.Endpoint = DefaultEndpoint
	}
	e.Token = strings.TrimSpace(getenv("HF_TOKEN"))
	if e.Token == "" {
		path := getenv("HF_TOKEN_PATH")
		if path == "" {
			path = filepath.Join(hfHome, "token")
		}
		if b, err := os.ReadFile(expand(path)); err == nil {
			e.Token = strings.TrimSpace(string(b))
		}
	}
	return e
}

// HubCache is the cache directory: HF_HUB_CACHE, else HF_HOME/hub, else
// home/.cache/huggingface/hub (see HubEnv).
func HubCache(getenv func(string) string, home string) string {
	return HubEnv(getenv, home).CacheDir
}

// repoPrefix starts every model folder of the cache.
const repoPrefix = "models--"

// RepoDir is the cache folder of repo "org/name": <cache>/models--org--name.
func RepoDir(cacheDir, repo string) string {
	return filepath.Join(cacheDir, repoPrefix+strings.ReplaceAll(repo, "/", "--"))
}

// repoOf turns a cache folder name back into "org/name"; ok is false for
// folders that are not model repos (datasets--, spaces--, .locks).
func repoOf(folder string) (string, bool) {
	rest, ok := strings.CutPrefix(folder, repoPrefix)
	if !ok || rest == "" {
		return "", false
	}
	return strings.ReplaceAll(rest, "--", "/"), true
}

// CheckRepoID checks that id is "org/name" (or a bare "name", which the hub
// still serves for a few old repos) made of the characters the hub allows.
// Its errors wrap ErrInvalidName.
func CheckRepoID(id string) error {
	parts := strings.Split(id, "/")
	if len(parts) > 2 || id == "" {
		return fmt.Errorf("%w: repo id %s is not of the form org/name", ErrInvalidName, QuoteName(id))
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || len(p) > 96 || strings.Contains(p, "--") {
			return fmt.Errorf("%w: repo id %s is not of the form org/name", ErrInvalidName, QuoteName(id))
		}
		for _, r := range p {
			ok := r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
			if !ok {
				return fmt.Errorf("%w: repo id %s has the character %q (allowed: letters, digits, '-', '_', '.')", ErrInvalidName, QuoteName(id), r)
			}
		}
	}
	return nil
}

// checkRevision checks that rev can name a branch, tag or commit.
func checkRevision(rev string) error {
	if checkRepoPath(rev) != nil {
		return fmt.Errorf("%w: revision %s is not a branch, tag or commit", ErrInvalidName, QuoteName(rev))
	}
	return nil
}

// ParseName splits what a user asks to pull, "org/name" or
// "org/name@revision", and checks both parts (errors wrap ErrInvalidName).
// The revision is "" when none is given.
func ParseName(name string) (repo, rev string, err error) {
	repo, rev, hasRev := strings.Cut(name, "@")
	if err := CheckRepoID(repo); err != nil {
		return "", "", err
	}
	if hasRev {
		if err := checkRevision(rev); err != nil {
			return "", "", err
		}
	}
	return repo, rev, nil
}

// snapshot is one revision of a repo in the cache.
type snapshot struct {
	repo   string
	commit string
	dir    string
	refs   []string // refs pointing at commit, sorted
}

// repoSnapshots lists the snapshots of one repo folder, with the refs that
// point at each. A ref whose snapshot folder is missing is ignored (the
// download that would have made it failed).
func repoSnapshots(repoDir, repo string) ([]snapshot, error) {
	entries, err := os.ReadDir(filepath.Join(repoDir, "snapshots"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	refs, err := readRefs(repoDir)
	if err != nil {
		return nil, err
	}
	byCommit := map[string][]string{}
	for name, commit := range refs {
		byCommit[commit] = append(byCommit[commit], name)
	}
	var out []snapshot
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		s := snapshot{repo: repo, commit: e.Name(), dir: filepath.Join(repoDir, "snapshots", e.Name()), refs: byCommit[e.Name()]}
		sort.Strings(s.refs)
		out = append(out, s)
	}
	return out, nil
}

// readRefs maps every ref under repoDir/refs ("main", "v1.0", "refs/pr/1")
// to the commit it holds.
func readRefs(repoDir string) (map[string]string, error) {
	root := filepath.Join(repoDir, "refs")
	refs := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		refs[filepath.ToSlash(rel)] = strings.TrimSpace(string(b))
		return nil
	})
	return refs, err
}

// scanCache lists the model repos of the cache as "org/name", sorted. A
// missing cache is empty, not an error.
func scanCache(cacheDir string) ([]string, error) {
	entries, err := os.ReadDir(cacheDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var repos []string
	for _, e := range entries {
		if repo, ok := repoOf(e.Name()); ok && e.IsDir() {
			repos = append(repos, repo)
		}
	}
	sort.Strings(repos)
	return repos, nil
}
