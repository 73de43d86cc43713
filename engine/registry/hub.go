// The Hugging Face hub API as Pull uses it: the revision info that lists a
// repo's files, the headers of a file download, and the hub's error
// answers turned into errors a user can act on.

package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// ErrAuth: the hub refused access (a private or gated repo, or a bad token).
var ErrAuth = errors.New("the hub refused access")

// HubError is a failure of the hub rather than of the request: no answer,
// an error status other than not-found or refused (after any retries), a
// revision info or file headers Pull cannot use (a bad commit, file name,
// size or hash), or bytes that do not match the hash the hub announced.
// Its message is the hub's reason.
type HubError struct{ Err error }

func (e *HubError) Error() string { return e.Err.Error() }
func (e *HubError) Unwrap() error { return e.Err }

// hubFault wraps err as a HubError, unless it is nil or already one.
func hubFault(err error) error {
	var he *HubError
	if err == nil || errors.As(err, &he) {
		return err
	}
	return &HubError{Err: err}
}

// OfflineError is a request that reached no server at all: no DNS answer,
// a refused connection, a timeout. Most often the machine is offline; its
// message says so in one sentence.
type OfflineError struct {
	Host string // the server it tried ("huggingface.co")
	Err  error  // the network's reason
}

func (e *OfflineError) Error() string {
	return fmt.Sprintf("cannot reach %s (offline?): %v", e.Host, e.Err)
}

func (e *OfflineError) Unwrap() error { return e.Err }

// reachError describes a request to u that got no answer: an
// *OfflineError when no connection could be made, else err with what
// (e.g. "reach the hub") before it.
func reachError(u string, err error, what string) error {
	host := u
	if pu, perr := url.Parse(u); perr == nil && pu.Hostname() != "" {
		host = pu.Hostname()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if pu, perr := url.Parse(ue.URL); perr == nil && pu.Hostname() != "" {
			host = pu.Hostname() // after a redirect, the CDN's host
		}
	}
	var (
		dns *net.DNSError
		op  *net.OpError
		ne  net.Error
	)
	switch {
	case errors.As(err, &dns):
		return &OfflineError{Host: host, Err: dns}
	case errors.As(err, &op) && op.Op == "dial":
		return &OfflineError{Host: host, Err: op}
	case errors.As(err, &ne) && ne.Timeout():
		return &OfflineError{Host: host, Err: errors.New("timed out")}
	}
	return fmt.Errorf("%s: %w", what, err)
}

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

// fileHeaders reads a file's etag (lower case) and size from the headers
// of its HEAD answer: X-Linked-Etag and X-Linked-Size on the hub's
// redirect to an LFS file, ETag and Content-Length otherwise. The etag
// names a blob file, so it must be a plain name: letters, digits, '-',
// '_' and '.', at most 128 bytes. X-Repo-Commit, when present, must be
// commit.
func fileHeaders(h http.Header, contentLength int64, commit string) (etag string, size int64, err error) {
	if c := h.Get("X-Repo-Commit"); c != "" && !strings.EqualFold(c, commit) {
		return "", 0, fmt.Errorf("the hub served commit %s, not %s", QuoteName(c), commit)
	}
	etag = normalizeEtag(h.Get("X-Linked-Etag"))
	if etag == "" {
		etag = normalizeEtag(h.Get("ETag"))
	}
	size = contentLength
	if s := h.Get("X-Linked-Size"); s != "" {
		if size, err = strconv.ParseInt(s, 10, 64); err != nil {
			return "", 0, fmt.Errorf("X-Linked-Size %s is not a number", QuoteName(s))
		}
	}
	if !plainName(etag) || size < 0 {
		return "", 0, fmt.Errorf("the hub gave no usable ETag and size (etag %s, size %d)", QuoteName(etag), size)
	}
	return strings.ToLower(etag), size, nil
}

// plainName reports whether s can name a file of blobs/ as it is.
func plainName(s string) bool {
	if s == "" || len(s) > 128 || s == "." || s == ".." || strings.HasSuffix(s, ".incomplete") {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
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
// a gated or private repo or a bad token, a *HubError with the hub's
// message for anything else.
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
	if len(msg) > maxNameShown {
		msg = strings.ToValidUTF8(msg[:maxNameShown], "") + "…"
	}
	if msg != "" {
		msg = ": " + msg
	}
	return &HubError{Err: fmt.Errorf("%s: the hub answered %s for %s%s", repo, resp.Status, what, msg)}
}
