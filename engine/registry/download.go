// Downloading one file into blobs/ (resumable, verified) and placing a
// finished pull's snapshot.

package registry

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// errCorrupt marks a download whose bytes do not match the hub's hash
// (inside a *HubError).
var errCorrupt = errors.New("corrupt download")

// retryable marks a failure another attempt may cure: a dropped
// connection, a stalled transfer, a 5xx or 429 from the hub or its CDN.
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

// stallTimeout ends a transfer that delivers no byte for this long; the
// retry resumes it.
const stallTimeout = 60 * time.Second

// fetch makes blobs/<etag> whole: present already, or downloaded (with
// retries that resume) under the lock huggingface_hub also takes.
func (p *puller) fetch(ctx context.Context, commit string, f repoFile) error {
	blob := filepath.Join(p.repoDir, "blobs", f.Etag)
	if st, err := os.Stat(blob); err == nil && st.Size() == f.Size {
		p.finished(f)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return err
	}
	unlock, err := lockFile(ctx, p.lockPath(f))
	if err != nil {
		return err
	}
	defer unlock()
	if st, err := os.Stat(blob); err == nil && st.Size() == f.Size {
		p.finished(f) // another process finished it while we waited
		return nil
	}
	delay := p.opt.retryDelay
	for attempt := 1; ; attempt++ {
		err := p.download(ctx, commit, f, blob)
		var r retryable
		if err == nil || !errors.As(err, &r) || attempt == maxAttempts || ctx.Err() != nil {
			switch {
			case err == nil:
				p.finished(f)
			case ctx.Err() != nil:
				return context.Cause(ctx)
			case errors.As(err, &r):
				return hubFault(err) // the hub kept failing
			}
			return err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return ctx.Err()
		}
		delay *= 2
	}
}

// lockPath is the lock file of f's blob, where huggingface_hub puts it.
func (p *puller) lockPath(f repoFile) string {
	return filepath.Join(p.opt.CacheDir, ".locks", filepath.Base(p.repoDir), f.Etag+".lock")
}

// dropPartials removes the partial blobs of files after a failed pull
// (this one's, and any an earlier pull left), skipping those another
// process holds the lock of: it is writing them.
func (p *puller) dropPartials(files []repoFile) {
	now, cancel := context.WithCancel(context.Background())
	cancel() // one try at each lock, no waiting
	for _, f := range files {
		inc := filepath.Join(p.repoDir, "blobs", f.Etag+".incomplete")
		if _, err := os.Stat(inc); err != nil {
			continue
		}
		if unlock, err := lockFile(now, p.lockPath(f)); err == nil {
			os.Remove(inc)
			unlock()
		}
	}
}

// download writes f into blob+".incomplete", resuming from its length with
// a Range request, verifies it, and renames it to blob.
func (p *puller) download(ctx context.Context, commit string, f repoFile, blob string) error {
	inc := blob + ".incomplete"
	fh, err := os.OpenFile(inc, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return err
	}
	have := st.Size()
	if have > f.Size {
		if err := fh.Truncate(0); err != nil {
			return err
		}
		have = 0
	}
	v := newVerifier(f)
	if _, err := io.Copy(v, io.NewSectionReader(fh, 0, have)); err != nil {
		return err
	}
	p.setGot(f.Name, have)
	if have < f.Size {
		if have, err = p.transfer(ctx, commit, f, fh, have, v); err != nil {
			return err
		}
	}
	if have != f.Size {
		return retryable{fmt.Errorf("got %d of %d bytes", have, f.Size)}
	}
	if got, ok := v.check(); !ok {
		fh.Close()
		os.Remove(inc) // a resume would keep the bad bytes
		return hubFault(fmt.Errorf("%w: %s is %s, the hub says %s (run hearth pull again)", errCorrupt, v.kind, got, f.Etag))
	}
	if err := fh.Sync(); err != nil {
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	return os.Rename(inc, blob)
}

// transfer GETs the bytes of f from offset have on and appends them to fh
// (starting over when the server ignores the Range), returning the length
// written.
func (p *puller) transfer(ctx context.Context, commit string, f repoFile, fh *os.File, have int64, v *verifier) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := p.request(ctx, http.MethodGet, p.resolveURL(commit, f.Name))
	if err != nil {
		return have, err
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := p.opt.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return have, err
		}
		return have, retryable{reachError(req.URL.String(), err, "reach the hub")}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent:
		if start, ok := contentRangeStart(resp.Header.Get("Content-Range")); !ok || start != have {
			return have, retryable{fmt.Errorf("asked for bytes from %d, got Content-Range %q", have, resp.Header.Get("Content-Range"))}
		}
	case resp.StatusCode == http.StatusOK:
		if have > 0 { // the server sent the whole file: start over
			if err := fh.Truncate(0); err != nil {
				return have, err
			}
			have = 0
			v.reset()
			p.setGot(f.Name, 0)
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		fh.Truncate(0)
		p.setGot(f.Name, 0)
		return 0, retryable{fmt.Errorf("the hub refused to resume at byte %d", have)}
	default:
		err := hubError(resp, p.opt.Repo, f.Name, p.opt.Token != "")
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			err = retryable{err}
		}
		return have, err
	}
	if _, err := fh.Seek(have, io.SeekStart); err != nil {
		return have, err
	}
	stall := time.AfterFunc(stallTimeout, cancel)
	defer stall.Stop()
	buf := make([]byte, 1<<20)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			stall.Reset(stallTimeout)
			if have+int64(n) > f.Size {
				return have, retryable{fmt.Errorf("the hub sent more than the %d bytes it announced", f.Size)}
			}
			if _, err := fh.Write(buf[:n]); err != nil {
				return have, err
			}
			v.Write(buf[:n])
			have += int64(n)
			p.setGot(f.Name, have)
		}
		if rerr == io.EOF {
			return have, nil
		}
		if rerr != nil {
			if ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
				return have, ctx.Err()
			}
			return have, retryable{fmt.Errorf("download broke off at byte %d of %d: %w", have, f.Size, rerr)}
		}
	}
}

// contentRangeStart reads the first byte of "bytes 100-199/200".
func contentRangeStart(h string) (int64, bool) {
	rest, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return 0, false
	}
	start, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(start, 10, 64)
	return n, err == nil
}

// verifier hashes a download the way its etag was made: sha256 for LFS
// files, the git blob sha1 ("blob <size>\x00" + bytes) for small ones. An
// etag that is neither (a mirror's own) leaves only the size to check.
type verifier struct {
	kind string // "sha256", "git sha1" or ""
	want string
	size int64
	h    hash.Hash
}

func newVerifier(f repoFile) *verifier {
	v := &verifier{want: f.Etag, size: f.Size}
	switch {
	case len(f.Etag) == 64 && isHex(f.Etag):
		v.kind, v.h = "sha256", sha256.New()
	case len(f.Etag) == 40 && isHex(f.Etag):
		v.kind, v.h = "git sha1", sha1.New()
	}
	v.reset()
	return v
}

func (v *verifier) reset() {
	if v.h == nil {
		return
	}
	v.h.Reset()
	if v.kind == "git sha1" {
		fmt.Fprintf(v.h, "blob %d\x00", v.size)
	}
}

func (v *verifier) Write(b []byte) (int, error) {
	if v.h != nil {
		v.h.Write(b)
	}
	return len(b), nil
}

// check returns the hash and whether it is the one the hub announced.
func (v *verifier) check() (string, bool) {
	if v.h == nil {
		return "", true
	}
	got := hex.EncodeToString(v.h.Sum(nil))
	return got, got == v.want
}

// place links snapshots/<commit>/<file> to each blob (relative symlinks,
// replaced atomically) and, when the revision is a name, writes
// refs/<revision>.
func (p *puller) place(commit string, files []repoFile) error {
	snap := filepath.Join(p.repoDir, "snapshots", commit)
	for _, f := range files {
		link := filepath.Join(snap, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return err
		}
		target, err := filepath.Rel(filepath.Dir(link), filepath.Join(p.repoDir, "blobs", f.Etag))
		if err != nil {
			return err
		}
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		tmp := link + ".hearth-tmp"
		os.Remove(tmp)
		if err := os.Symlink(target, tmp); err != nil {
			return err
		}
		if err := os.Rename(tmp, link); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	if p.opt.Revision == commit {
		return nil
	}
	ref := filepath.Join(p.repoDir, "refs", filepath.FromSlash(p.opt.Revision))
	if err := os.MkdirAll(filepath.Dir(ref), 0o755); err != nil {
		return err
	}
	tmp := ref + ".hearth-tmp"
	if err := os.WriteFile(tmp, []byte(commit), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, ref)
}
