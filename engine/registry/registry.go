// Package registry knows which models are on this machine: every snapshot
// in the Hugging Face cache (the layout huggingface_hub shares) and every
// local directory registered by path. Each becomes a Record saying what it
// is and how well Hearth supports it, read from config.json and the
// safetensors headers alone. It also pulls repos from the hub into that
// cache (Pull) and removes them (Remove).
package registry

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"hearth/engine/gguf"
)

// Errors a caller acts on.
var (
	// ErrNotFound: no model by that name (on this machine, or on the hub).
	ErrNotFound = errors.New("model not found")
	// ErrAmbiguous: a short name matches several repos.
	ErrAmbiguous = errors.New("model name is ambiguous")
	// ErrDrafter: the model is a draft model, not servable on its own.
	ErrDrafter = errors.New("draft model, not servable on its own")
	// ErrInvalidName: a repo id or revision that cannot name anything on
	// the hub (the request's fault, before any lookup).
	ErrInvalidName = errors.New("invalid model name")
)

// Registry lists and resolves models. Every call looks at the disk afresh,
// so a pull or rm in another process shows up; a snapshot's record is
// reused while its files keep their sizes and times (memo).
type Registry struct {
	cache    string
	local    []string
	builtin  []Builtin
	profiles []ExactProfile
	memo     *memo
	catalog  *Catalog // short names of models pulled by name (WithCatalog); nil for none
	// aliasPath is the alias table's file (WithAliases); "" for none.
	aliasPath string
	stores    Stores // other tools' models (WithStores)
}

// Builtin is a model that ships with Hearth, listed and resolved by its
// own name (e.g. "hearth/starter") rather than by its directory.
type Builtin struct{ ID, Dir string }

// WithBuiltin adds built-in models to r and returns r.
func (r *Registry) WithBuiltin(b ...Builtin) *Registry {
	r.builtin = append(r.builtin, b...)
	return r
}

// builtinRecord classifies a built-in model under its own name.
func (r *Registry) builtinRecord(b Builtin) Record {
	rec := r.classifyLocal(b.Dir)
	rec.ID, rec.Builtin = b.ID, true
	return rec
}

// New returns a registry over the cache directory (see HubCache) and the
// given local model directories.
func New(cacheDir string, localDirs ...string) *Registry {
	r := &Registry{cache: cacheDir, profiles: exactProfiles, memo: &memo{}}
	for _, d := range localDirs {
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		r.local = append(r.local, d)
	}
	return r
}

// CacheDir is the Hugging Face cache the registry reads.
func (r *Registry) CacheDir() string { return r.cache }

// List returns every snapshot in the cache and every registered local
// directory, sorted by name. A broken entry is listed as unsupported with
// the reason; only an unreadable cache directory is an error.
func (r *Registry) List() ([]Record, error) {
	repos, err := scanCache(r.cache)
	if err != nil {
		return nil, fmt.Errorf("read cache %s: %w", r.cache, err)
	}
	var out []Record
	for _, repo := range repos {
		out = append(out, r.repoRecords(repo)...)
	}
	for _, d := range r.local {
		out = append(out, r.classifyLocal(d))
	}
	for _, b := range r.builtin {
		out = append(out, r.builtinRecord(b))
	}
	for _, m := range r.stores.models() {
		out = append(out, r.storeRecord(m))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// repoRecords classifies every snapshot of one cached repo; a repo folder
// without snapshots is one unsupported record.
func (r *Registry) repoRecords(repo string) []Record {
	snaps, err := repoSnapshots(RepoDir(r.cache, repo), repo)
	if err != nil || len(snaps) == 0 {
		if err == nil {
			err = noSnapshot(RepoDir(r.cache, repo), repo)
		}
		return []Record{{ID: repo, Dir: RepoDir(r.cache, repo), Tier: TierUnsupported, Reason: err.Error(), err: unservable{err}, Capabilities: []string{}, Drafter: drafterName(repo)}}
	}
	var out []Record
	for _, s := range snaps {
		out = append(out, r.memo.classify(s.dir, repo, s.commit, s.refs, r.profiles))
	}
	return out
}

func (r *Registry) classifyLocal(dir string) Record {
	return r.memo.classify(dir, dir, "", nil, r.profiles)
}

// Resolve finds the model a user names on the command line: "org/name"
// (the snapshot refs/main points at), "org/name@rev" (a ref or a commit, or
// its first 7+ hex digits), a directory path, or a short name
// ("Qwen3-0.6B") that only one cached repo or local directory has, or an
// alias (Copy), which resolves to the record of the model it names. The
// record comes back even when it cannot be served; the error then says
// why: it wraps ErrNotFound (with the closest names), ErrAmbiguous,
// ErrDrafter, or the classification's cause (family.ErrUnsupported for an
// unsupported model_type).
func (r *Registry) Resolve(name string) (Record, error) { return r.resolve(name, true, true) }

// ResolveName is Resolve for names that come over the network: the cache
// (a repo id, with a revision or not, or a short name), the built-in
// entries, the registered local directories (by their exact name or
// base name) and the aliases only. A name is never joined to a path or looked up on disk,
// and every name it does not know gets the same ErrNotFound message
// (UnknownName's), so its answers tell nothing about the filesystem.
func (r *Registry) ResolveName(name string) (Record, error) { return r.resolve(name, false, true) }

// maxNameBytes is longer than any name Resolve can find ("org/name" is at
// most 193 bytes, a revision a few hundred): a longer one is unknown at once.
const maxNameBytes = 1024

// resolve is Resolve (paths) or ResolveName; aliases says whether name may
// be an alias (an alias's target is resolved without: no alias chains).
func (r *Registry) resolve(name string, paths, aliases bool) (Record, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return Record{}, fmt.Errorf("%w: no model name given", ErrNotFound)
	}
	if len(name) > maxNameBytes {
		return Record{}, r.notFound(name, paths)
	}
	for _, b := range r.builtin {
		if name == b.ID {
			rec := r.builtinRecord(b)
			return rec, rec.Err()
		}
	}
	for _, d := range r.local {
		if name == d { // a registered directory, by the name List gives it
			return r.resolveDir(d)
		}
	}
	if target, ok := r.aliasTarget(name); ok && aliases {
		return r.resolve(target, false, false)
	}
	if strings.HasPrefix(name, ollamaPrefix) || strings.HasPrefix(name, lmstudioPrefix) {
		rec, _, err := r.resolveStore(name)
		return rec, err
	}
	if isPath(name) {
		if !paths {
			return Record{}, r.notFound(name, paths)
		}
		return r.resolveDir(name)
	}
	repo, rev, hasRev := strings.Cut(name, "@")
	if strings.Contains(repo, "/") {
		if rec, ok, err := r.resolveRepo(repo, rev, hasRev); ok {
			return rec, err
		}
		if paths {
			if onDisk(name) {
				return r.resolveDir(name)
			}
		}
		return Record{}, r.notFound(name, paths)
	}
	// A short name: the part after "/" of one cached repo, or the base
	// name of one local directory.
	var hits []string
	repos, err := scanCache(r.cache)
	if err != nil {
		return Record{}, fmt.Errorf("read cache %s: %w", r.cache, err)
	}
	for _, full := range repos {
		if strings.EqualFold(full[strings.LastIndex(full, "/")+1:], repo) {
			hits = append(hits, full)
		}
	}
	for _, d := range r.local {
		if strings.EqualFold(filepath.Base(d), repo) {
			hits = append(hits, d)
		}
	}
	switch len(hits) {
	case 0:
		if paths {
			if onDisk(name) {
				return r.resolveDir(name)
			}
		}
		rec, ok, err := r.resolveCatalog(repo, rev, hasRev)
		if ok && err == nil {
			return rec, nil
		}
		// A name Ollama users know, not pulled here: the one Ollama
		// downloaded, when it has it.
		if srec, found, serr := r.resolveStore(name); found {
			return srec, serr
		}
		if ok {
			return rec, err
		}
		return Record{}, r.notFound(name, paths)
	case 1:
		if filepath.IsAbs(hits[0]) {
			return r.resolveDir(hits[0]) // a registered directory
		}
		rec, ok, err := r.resolveRepo(hits[0], rev, hasRev)
		if !ok {
			return Record{}, r.notFound(name, paths)
		}
		return rec, err
	}
	return Record{}, fmt.Errorf("%w: %s matches %s; name one of them in full", ErrAmbiguous, QuoteName(name), strings.Join(hits, ", "))
}

// onDisk reports whether name is a checkpoint's path as it stands: a
// folder, or a GGUF file.
func onDisk(name string) bool {
	st, err := os.Stat(name)
	if err != nil {
		return false
	}
	file, _ := gguf.Find(name)
	return st.IsDir() || file == name
}

// isPath reports whether name is written as a path rather than a repo id.
func isPath(name string) bool {
	return filepath.IsAbs(name) || name == "." || name == ".." ||
		strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") || strings.HasPrefix(name, "~/")
}

func (r *Registry) resolveDir(dir string) (Record, error) {
	if rest, ok := strings.CutPrefix(dir, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, rest)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Record{}, err
	}
	st, err := os.Stat(abs)
	if file, _ := gguf.Find(abs); err != nil || !st.IsDir() && file != abs { // a .gguf file is a checkpoint too
		return Record{}, fmt.Errorf("%w: %s is not a directory or a .gguf file", ErrNotFound, abs)
	}
	rec := r.classifyLocal(abs)
	return rec, wrapName(rec.ID, rec.Err())
}

// resolveRepo finds repo's snapshot for rev (refs/main without one); ok is
// false when the repo is not cached at all.
func (r *Registry) resolveRepo(repo, rev string, hasRev bool) (rec Record, ok bool, err error) {
	dir := RepoDir(r.cache, repo)
	if CheckRepoID(repo) != nil {
		return Record{}, false, nil
	}
	if _, err := os.Stat(dir); err != nil {
		return Record{}, false, nil
	}
	snaps, err := repoSnapshots(dir, repo)
	if err != nil || len(snaps) == 0 {
		recs := r.repoRecords(repo)
		return recs[0], true, wrapName(repo, recs[0].Err())
	}
	if !hasRev {
		rev = "main"
	}
	var pick []snapshot
	for _, s := range snaps {
		if slices.Contains(s.refs, rev) || s.commit == rev {
			pick = []snapshot{s}
			break
		}
		if len(rev) >= 7 && isHex(rev) && strings.HasPrefix(s.commit, strings.ToLower(rev)) {
			pick = append(pick, s)
		}
	}
	if !hasRev && len(pick) == 0 && len(snaps) == 1 {
		pick = snaps // no refs/main, but only one revision: that is the model
	}
	if len(pick) != 1 {
		var revs []string
		for _, s := range snaps {
			revs = append(revs, Record{ID: repo, Revision: s.commit, Refs: s.refs}.Name())
		}
		what := ErrNotFound
		if len(pick) > 1 {
			what = ErrAmbiguous
		}
		return Record{}, true, fmt.Errorf("%w: %s has no single revision %s (cached: %s)", what, repo, QuoteName(rev), strings.Join(revs, ", "))
	}
	s := pick[0]
	rec = r.memo.classify(s.dir, repo, s.commit, s.refs, r.profiles)
	return rec, true, wrapName(rec.Name(), rec.Err())
}

func wrapName(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", name, err)
}

func isHex(s string) bool {
	for _, c := range strings.ToLower(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// notFound wraps ErrNotFound with the closest names on this machine; for
// the command line (paths) it names the cache directory too.
func (r *Registry) notFound(name string, paths bool) error {
	var names []string
	if len(name) <= maxNameShown && !isPath(name) { // a path is no typo of a repo id
		if repos, err := scanCache(r.cache); err == nil {
			names = append(names, repos...)
		}
		names = append(names, r.local...)
	}
	where := "the Hugging Face cache"
	if paths {
		where = r.cache
	}
	return unknown(name, where, closest(name, names, 3))
}

// UnknownName is the error ResolveName gives for a name it does not know,
// for a caller that has no registry to ask.
func UnknownName(name string) error { return unknown(name, "the Hugging Face cache", nil) }

func unknown(name, where string, near []string) error {
	msg := fmt.Sprintf("%s is not in %s", QuoteName(name), where)
	if len(near) > 0 {
		msg += " (did you mean " + strings.Join(near, ", ") + "?)"
	}
	return fmt.Errorf("%w: %s; run hearth pull org/name to download it", ErrNotFound, msg)
}

// maxNameShown is how much of a name a message repeats (see QuoteName).
const maxNameShown = 200

// QuoteName quotes name for a message: whole when its quoted text is at
// most 200 bytes, else that much of it (cut at a character), an ellipsis
// and the name's full length, so that no request can make an error as
// long as itself.
func QuoteName(name string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); {
		_, size := utf8.DecodeRuneInString(name[i:])
		piece := strconv.Quote(name[i : i+size]) // an invalid byte becomes \xNN
		piece = piece[1 : len(piece)-1]
		if b.Len()-1+len(piece) > maxNameShown {
			return fmt.Sprintf("%s\"… (%d bytes)", b.String(), len(name))
		}
		b.WriteString(piece)
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// closest returns up to n of names nearest to name: those containing it
// (ignoring case) first, then those within an edit distance of a fifth of
// its length, by distance.
func closest(name string, names []string, n int) []string {
	q := strings.ToLower(name)
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for _, full := range names {
		l := strings.ToLower(full)
		short := l[strings.LastIndex(l, "/")+1:]
		d := min(editDistance(q, l), editDistance(q, short))
		if strings.Contains(l, q) || strings.Contains(q, short) {
			d = 0
		}
		if d <= max(1, len(q)/5) {
			cs = append(cs, cand{full, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
