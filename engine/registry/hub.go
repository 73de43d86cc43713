// The Hugging Face hub API as Pull uses it: the revision info that lists a
// repo's files, the headers of a file download, and the hub's error
// answers turned into errors a user can act on.

package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
)

// ErrAuth: the hub refused access (a private or gated repo, or a bad token).
var ErrAuth = errors.New("the hub refused access")

// repoInfo is what GET /api/models/{repo}/revision/{rev}?blobs=true says.
type repoInfo struct {
	Commit string     // the 40-hex commit the revision points at
	Files  []repoFile // every file of the repo at that commit
}

// repoFile is one sibling of the revision info. Etag is the sha256 of an
// LFS file or the git blob sha1 of a small file; Size is its length. Both
// are zero when the hub did not say (an old mirror without blobs=true);
// Pull then asks the file's own headers.
type repoFile struct {
	Name string
	Size int64
	Etag string
	LFS  bool
}

// maxInfoBytes caps the revision info Pull reads (the hub's answer for a
// repo with thousands of files is a few MB).
const maxInfoBytes = 64 << 20

// decodeRepoInfo parses and checks the revision info: the commit must be
// 40 hex digits, every file name a relative path inside the repo, every
// size non-negative and every etag hex.
func decodeRepoInfo(r io.Reader) (repoInfo, error) {
	var raw struct {
		SHA      string `json:"sha"`
		Siblings []struct {
			RFilename string `json:"rfilename"`
			Size      *int64 `json:"size"`
			BlobID    string `json:"blobId"`
			LFS       *struct {
				SHA256 string `json:"sha256"`
				Size   int64  `json:"size"`
			} `json:"lfs"`
		} `json:"siblings"`
	}
	dec := json.NewDecoder(io.LimitReader(r, maxInfoBytes))
	if err := dec.Decode(&raw); err != nil {
		return repoInfo{}, fmt.Errorf("revision info: %w", err)
	}
	if len(raw.SHA) != 40 || !isHex(raw.SHA) {
		return repoInfo{}, fmt.Errorf("revision info: sha %q is not a 40-digit commit hash", raw.SHA)
	}
	info := repoInfo{Commit: strings.ToLower(raw.SHA)}
	seen := map[string]bool{}
	for _, s := range raw.Siblings {
		if err := checkRepoPath(s.RFilename); err != nil {
			return repoInfo{}, fmt.Errorf("revision info: %w", err)
		}
		if seen[s.RFilename] {
			return repoInfo{}, fmt.Errorf("revision info: file %q is listed twice", s.RFilename)
		}
		seen[s.RFilename] = true
		f := repoFile{Name: s.RFilename}
		switch {
		case s.LFS != nil:
			if len(s.LFS.SHA256) != 64 || !isHex(s.LFS.SHA256) || s.LFS.Size < 0 {
				return repoInfo{}, fmt.Errorf("revision info: file %q has LFS sha256 %q and size %d", s.RFilename, s.LFS.SHA256, s.LFS.Size)
			}
			f.Etag, f.Size, f.LFS = strings.ToLower(s.LFS.SHA256), s.LFS.Size, true
		case s.BlobID != "":
			if len(s.BlobID) != 40 || !isHex(s.BlobID) || s.Size == nil || *s.Size < 0 {
				return repoInfo{}, fmt.Errorf("revision info: file %q has blob id %q and no valid size", s.RFilename, s.BlobID)
			}
			f.Etag, f.Size = strings.ToLower(s.BlobID), *s.Size
		}
		info.Files = append(info.Files, f)
	}
	return info, nil
}

// checkRepoPath accepts a file name inside a repo: slash-separated, no
// empty, "." or ".." component, no backslash or NUL, not absolute.
func checkRepoPath(name string) error {
	if name == "" || len(name) > 1024 || strings.HasPrefix(name, "/") || strings.ContainsAny(name, "\\\x00") || path.Clean(name) != name {
		return fmt.Errorf("file name %q is not a relative path inside the repo", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == "." || part == ".." || part == "" {
			return fmt.Errorf("file name %q is not a relative path inside the repo", name)
		}
	}
	return nil
}

// normalizeEtag strips the weak-validator prefix and quotes of an ETag
// header, as huggingface_hub does.
func normalizeEtag(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "W/")
	return strings.Trim(s, `"`)
}

// hubError turns a hub answer other than success into an error that says
// what to do: ErrNotFound for a missing repo, revision or file (which is
// also what the hub says about a private repo to a stranger), ErrAuth for
// a gated or private repo or a bad token.
func hubError(resp *http.Response, repo, what string, haveToken bool) error {
	code := resp.Header.Get("X-Error-Code")
	msg := strings.TrimSpace(resp.Header.Get("X-Error-Message"))
	if msg == "" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		var body struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &body) == nil {
			msg = body.Error
		}
	}
	tokenHint := "set HF_TOKEN to a token from https://huggingface.co/settings/tokens (or run hf auth login)"
	if haveToken {
		tokenHint = "check that HF_TOKEN is valid and has read access"
	}
	switch {
	case code == "GatedRepo":
		return fmt.Errorf("%w: %s is gated: accept its terms on the model page, then %s", ErrAuth, repo, tokenHint)
	case code == "RepoNotFound" || resp.StatusCode == http.StatusNotFound && code == "":
		hint := ""
		if !haveToken {
			hint = "; if it is private, " + tokenHint
		}
		return fmt.Errorf("%w: repository %s is not on the hub (check the name%s)", ErrNotFound, repo, hint)
	case code == "RevisionNotFound":
		return fmt.Errorf("%w: %s has no revision %s", ErrNotFound, repo, what)
	case code == "EntryNotFound" || resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %s has no file %s", ErrNotFound, repo, what)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: %s answered %s for %s: %s", ErrAuth, repo, resp.Status, what, tokenHint)
	}
	if msg != "" {
		msg = ": " + msg
	}
	return fmt.Errorf("%s: the hub answered %s for %s%s", repo, resp.Status, what, msg)
}
