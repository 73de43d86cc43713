// Pulling a repo from the Hugging Face hub into the cache, in the layout
// huggingface_hub writes, so either tool can read what the other fetched.

package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// PullOptions say what to pull, from where, into which cache.
type PullOptions struct {
	Endpoint string // the hub (HF_ENDPOINT); "" means DefaultEndpoint
	Token    string // HF_TOKEN or the token file (see HubEnv); "" for public repos
	CacheDir string // the cache (see HubCache)
	Repo     string // "org/name"
	Revision string // a branch, tag or commit; "" means "main"
	Parallel int    // files downloaded at once; 0 means 4
	// Files picks the repo files to fetch; nil means what Hearth runs
	// (see WantFiles).
	Files func(name string) bool
	// Client makes the requests; nil means http.DefaultClient. Auth
	// headers are not forwarded when the hub redirects to another host
	// (its CDN), as net/http does by default.
	Client *http.Client

	// retryDelay is the pause before the first retry of a broken
	// download (doubled for each further one); 0 means a second.
	retryDelay time.Duration
}

// Progress is one report from Pull. Reports come from one goroutine at a
// time, at most every 100ms while bytes flow, and once per status change
// and finished file.
type Progress struct {
	Repo      string `json:"repo"`
	Revision  string `json:"revision"`         // as asked
	Commit    string `json:"commit,omitempty"` // the commit it resolved to ("" while resolving)
	Status    string `json:"status"`           // "resolving", "downloading" or "done"
	File      string `json:"file,omitempty"`   // the file just finished, when one did
	Completed int64  `json:"completed"`        // bytes present, of every file to fetch
	Total     int64  `json:"total"`
	FilesDone int    `json:"files_done"`
	Files     int    `json:"files"`
}

// Statuses of a Progress.
const (
	StatusResolving   = "resolving"
	StatusDownloading = "downloading"
	StatusDone        = "done"
)

// maxAttempts bounds the tries of one file's download; each retry resumes
// from the bytes already written.
const maxAttempts = 4

// Pull downloads opt.Repo at opt.Revision into opt.CacheDir: it asks the hub
// for the revision's commit and file list, fetches the wanted files in
// parallel into blobs/ (resuming any .incomplete blob with a Range request,
// retrying a dropped connection), checks each against the hub's sha256
// (LFS files) or git blob hash (small files), and only when every file is
// whole links snapshots/<commit>/ to the blobs and points refs/<revision>
// at the commit.
//
// A pull that fails leaves no snapshot and no partial file behind: the
// whole blobs it verified stay for the next pull, and a note in the repo's
// folder says why it failed (hearth ls shows it). A pull the caller
// cancels keeps its partial .incomplete blobs too, and the next pull
// resumes them. Errors say whose fault a failure is: ErrInvalidName for a
// repo id or revision that cannot exist, ErrNotFound and ErrAuth for the
// hub's refusals, *HubError for a hub that fails or answers what Pull
// cannot use (its reason in the message), ErrUnservable for a repo with no
// model files, and the context's error for a cancelled pull.
func Pull(ctx context.Context, opt PullOptions, progress func(Progress)) error {
	if opt.Endpoint == "" {
		opt.Endpoint = DefaultEndpoint
	}
	opt.Endpoint = strings.TrimRight(opt.Endpoint, "/")
	if opt.Revision == "" {
		opt.Revision = "main"
	}
	if opt.Parallel <= 0 {
		opt.Parallel = 4
	}
	if opt.Client == nil {
		opt.Client = http.DefaultClient
	}
	if opt.retryDelay <= 0 {
		opt.retryDelay = time.Second
	}
	if progress == nil {
		progress = func(Progress) {}
	}
	if err := CheckRepoID(opt.Repo); err != nil {
		return err
	}
	if err := checkRevision(opt.Revision); err != nil {
		return err
	}
	if opt.CacheDir == "" {
		return errors.New("pull: no cache directory")
	}
	p := &puller{opt: opt, report: progress, repoDir: RepoDir(opt.CacheDir, opt.Repo), got: map[string]int64{}}
	p.state = Progress{Repo: opt.Repo, Revision: opt.Revision, Status: StatusResolving}
	p.emit(true)
	if err := p.run(ctx); err != nil {
		return fmt.Errorf("pull %s: %w", opt.Repo, err)
	}
	return nil
}

// puller is one Pull in progress.
type puller struct {
	opt     PullOptions
	repoDir string

	mu     sync.Mutex
	report func(Progress)
	state  Progress
	got    map[string]int64 // bytes written per file
	last   time.Time        // last report
}

func (p *puller) run(ctx context.Context) error {
	info, err := p.revisionInfo(ctx)
	if err != nil {
		return err
	}
	files := p.pick(info.Files)
	if len(files) == 0 {
		return fmt.Errorf("%w: revision %s has no files Hearth can use (no config.json or *.safetensors)", ErrUnservable, p.opt.Revision)
	}
	for i := range files {
		if files[i].Etag == "" {
			if err := p.head(ctx, info.Commit, &files[i]); err != nil {
				return err
			}
		}
	}
	p.mu.Lock()
	p.state.Commit, p.state.Status, p.state.Files = info.Commit, StatusDownloading, len(files)
	for _, f := range files {
		p.state.Total += f.Size
	}
	p.mu.Unlock()
	p.emit(true)

	clearFailure(p.repoDir)
	parent := ctx
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	var (
		wg        sync.WaitGroup
		errMu     sync.Mutex
		first     error
		firstFile string
		slots     = make(chan struct{}, p.opt.Parallel)
	)
	for _, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-slots }()
			if err := p.fetch(ctx, info.Commit, f); err != nil {
				errMu.Lock()
				if first == nil && parent.Err() == nil {
					first, firstFile = fmt.Errorf("%s: %w", f.Name, err), f.Name
					cancel(errPullFailed)
				}
				errMu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := parent.Err(); err != nil {
		return fmt.Errorf("interrupted; the partial files stay, and pulling again resumes them: %w", err)
	}
	if first != nil {
		p.dropPartials(files)
		writeFailure(p.repoDir, pullFailure{Revision: p.opt.Revision, File: firstFile, Corrupt: errors.Is(first, errCorrupt), Error: first.Error()})
		return first
	}
	if err := p.place(info.Commit, files); err != nil {
		writeFailure(p.repoDir, pullFailure{Revision: p.opt.Revision, Error: err.Error()})
		return err
	}
	p.mu.Lock()
	p.state.Status, p.state.File = StatusDone, ""
	p.mu.Unlock()
	p.emit(true)
	return nil
}

// revisionInfo asks the hub for the revision's commit and file list.
func (p *puller) revisionInfo(ctx context.Context) (repoInfo, error) {
	u := fmt.Sprintf("%s/api/models/%s/revision/%s?blobs=true", p.opt.Endpoint, p.opt.Repo, url.PathEscape(p.opt.Revision))
	req, err := p.request(ctx, http.MethodGet, u)
	if err != nil {
		return repoInfo{}, err
	}
	resp, err := p.opt.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return repoInfo{}, ctx.Err()
		}
		return repoInfo{}, hubFault(reachError(u, err, "reach the hub"))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return repoInfo{}, hubError(resp, p.opt.Repo, p.opt.Revision, p.opt.Token != "")
	}
	info, err := decodeRepoInfo(resp.Body)
	if err != nil && ctx.Err() != nil {
		return repoInfo{}, ctx.Err()
	}
	return info, hubFault(err)
}

func (p *puller) request(ctx context.Context, method, u string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "hearth")
	if p.opt.Token != "" {
		req.Header.Set("Authorization", "Bearer "+p.opt.Token)
	}
	return req, nil
}

// resolveURL is where the hub serves a file of a commit.
func (p *puller) resolveURL(commit, name string) string {
	parts := strings.Split(name, "/")
	for i := range parts {
		parts[i] = url.PathEscape(parts[i])
	}
	return fmt.Sprintf("%s/%s/resolve/%s/%s", p.opt.Endpoint, p.opt.Repo, commit, strings.Join(parts, "/"))
}

// head fills f's etag and size from the file's own headers, for hubs whose
// revision info does not carry them: X-Linked-Etag and X-Linked-Size on
// the redirect to an LFS file, ETag and Content-Length otherwise.
func (p *puller) head(ctx context.Context, commit string, f *repoFile) error {
	client := *p.opt.Client
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		// Follow relative redirects (a renamed repo), as huggingface_hub
		// does; the absolute one to the CDN carries the headers we want.
		if strings.HasPrefix(req.Response.Header.Get("Location"), "/") && len(via) < 5 {
			return nil
		}
		return http.ErrUseLastResponse
	}
	req, err := p.request(ctx, http.MethodHead, p.resolveURL(commit, f.Name))
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return hubFault(fmt.Errorf("%s: %w", f.Name, reachError(req.URL.String(), err, "reach the hub")))
	}
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return hubError(resp, p.opt.Repo, f.Name, p.opt.Token != "")
	}
	etag, size, err := fileHeaders(resp.Header, resp.ContentLength, commit)
	if err != nil {
		return hubFault(fmt.Errorf("%s: %w", f.Name, err))
	}
	f.Etag, f.Size, f.LFS = etag, size, len(etag) == 64 && isHex(etag)
	return nil
}

// pick applies opt.Files, or WantFiles, to the revision's files.
func (p *puller) pick(all []repoFile) []repoFile {
	keep := p.opt.Files
	if keep == nil {
		names := make([]string, len(all))
		for i, f := range all {
			names[i] = f.Name
		}
		keep = WantFiles(names)
	}
	var out []repoFile
	for _, f := range all {
		if keep(f.Name) {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// stModule names a sentence-transformers module's folder ("1_Pooling").
var stModule = regexp.MustCompile(`^[0-9]+_[A-Za-z]+$`)

// WantFiles returns the filter Pull uses by default for a repo holding
// names: the top-level files Hearth reads — configs and other JSON,
// model*.safetensors (any *.safetensors when there is none of those, never
// both a model's own shards and a duplicate "consolidated" copy),
// tokenizer files, chat templates, the model card and license — and in
// subfolders only a sentence-transformers module's config.json
// (1_Pooling/config.json: how an embedding model pools), nothing else
// (original/, onnx/, gguf copies).
func WantFiles(names []string) func(string) bool {
	hasModel := false
	for _, n := range names {
		if !strings.Contains(n, "/") && strings.HasPrefix(n, "model") && strings.HasSuffix(n, ".safetensors") {
			hasModel = true
		}
	}
	return func(n string) bool {
		if dir, file, ok := strings.Cut(n, "/"); ok {
			return file == "config.json" && stModule.MatchString(dir)
		}
		ext := filepath.Ext(n)
		switch {
		case ext == ".safetensors":
			return !hasModel || strings.HasPrefix(n, "model")
		case ext == ".json", ext == ".jinja", ext == ".txt", ext == ".tiktoken":
			return true
		case n == "tokenizer.model", n == "tiktoken.model", n == "README.md", strings.HasPrefix(n, "LICENSE"):
			return true
		}
		return false
	}
}

// emit reports the current state; unless force, at most every 100ms.
func (p *puller) emit(force bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.emitLocked(force)
}

func (p *puller) emitLocked(force bool) {
	now := time.Now()
	if !force && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	p.report(p.state)
}

// setGot records that name has n bytes written.
func (p *puller) setGot(name string, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state.Completed += n - p.got[name]
	p.got[name] = n
	p.state.File = ""
	p.emitLocked(false)
}

// finished records that name is whole and verified.
func (p *puller) finished(f repoFile) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state.Completed += f.Size - p.got[f.Name]
	p.got[f.Name] = f.Size
	p.state.FilesDone++
	p.state.File = f.Name
	p.emitLocked(true)
}

// Remove deletes repo ("org/name") from the cache: every snapshot, blob
// and ref, and its lock files. It wraps ErrNotFound when the repo is not
// cached.
func Remove(cacheDir, repo string) error {
	if err := CheckRepoID(repo); err != nil {
		return err
	}
	dir := RepoDir(cacheDir, repo)
	st, err := os.Lstat(dir)
	if err != nil || !st.IsDir() {
		return fmt.Errorf("%w: %s is not in %s", ErrNotFound, repo, cacheDir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", repo, err)
	}
	if err := os.RemoveAll(filepath.Join(cacheDir, ".locks", filepath.Base(dir))); err != nil {
		return fmt.Errorf("remove %s: %w", repo, err)
	}
	return nil
}
