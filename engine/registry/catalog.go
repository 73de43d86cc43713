// The model catalog: the short names Ollama users know ("llama3.2",
// "qwen3:8b"), mapped onto mlx-community repos Hearth runs, with what a
// user choosing one wants to know before the download.

package registry

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"hearth/engine/config"
	"hearth/engine/families"
	"hearth/engine/family"
	"hearth/engine/fit"
)

//go:embed catalog.json
var builtinCatalogJSON []byte

// Catalog is a curated list of models to pull by short name. Hearth ships
// one (catalog.json, embedded in the binary); `hearth pull --catalog`
// fetches a newer file (FetchCatalog), which LoadCatalog then prefers.
//
// Where its numbers come from: each entry's Config holds the architecture
// keys of the repo's upstream config.json, written down by hand when the
// catalog was curated (context length and layer shapes: what fit and the
// family registry read). Params is computed from them; Bytes is the hub's
// file listing where one was at hand, else Params × 4.5 bits (4-bit
// weights plus a 16-bit scale and bias per group of 64). Nothing was
// checked against the hub when the catalog was written, so entries say
// Estimated; a pull reads the real files, and `hearth ls` shows those.
type Catalog struct {
	Version int    `json:"version"` // 1
	Updated string `json:"updated"` // YYYY-MM-DD: of the built-in and a fetched catalog, the newer wins
	Note    string `json:"note,omitempty"`
	// Models are in order of preference: among models that fit equally
	// well, the earlier is the better pick.
	Models []CatalogEntry `json:"models"`
}

// CatalogEntry is one model of the catalog. The fields after Config are
// derived from Config when the catalog is parsed, through the same code
// that classifies a downloaded model, so they agree with `hearth ls`.
type CatalogEntry struct {
	Names        []string        `json:"names"`        // short names; the first is how the entry is shown
	Repo         string          `json:"repo"`         // "org/name" on the hub
	Params       int64           `json:"parameters"`   // parameter count
	Bytes        int64           `json:"size_bytes"`   // download size
	Estimated    bool            `json:"estimated"`    // Params and Bytes are the catalog's estimates, not the repo's files
	Quantization string          `json:"quantization"` // as Checkpoint.Quantization labels it ("q4g64")
	Config       json.RawMessage `json:"config"`       // the architecture keys of the repo's config.json

	ModelType     string    `json:"-"`
	Family        string    `json:"-"` // the family that would run it ("" when none)
	Tier          string    `json:"-"` // TierTargeted, TierGeneric, or TierUnsupported when this build runs no such model_type
	Capabilities  []string  `json:"-"`
	ContextTokens int       `json:"-"` // max_position_embeddings
	Shape         fit.Shape `json:"-"` // for fit, with Bytes as the weights
}

// Name is how the entry is shown: its first short name.
func (e CatalogEntry) Name() string { return e.Names[0] }

// record is the entry as the fit judges and tables see a model.
func (e CatalogEntry) record() Record {
	return Record{ID: e.Repo, ModelType: e.ModelType, Family: e.Family, Tier: e.Tier, Capabilities: e.Capabilities,
		Params: e.Params, Bytes: e.Bytes, Quantization: e.Quantization, ContextTokens: e.ContextTokens, Shape: e.Shape}
}

// maxCatalogBytes bounds a catalog file (the built-in one is a few kB).
const maxCatalogBytes = 4 << 20

// ParseCatalog reads a catalog file and checks it: version 1, a date,
// and for every entry at least one valid short name (no name used twice
// in the catalog), a repo id of the form org/name, positive sizes and a
// config that parses.
func ParseCatalog(b []byte) (*Catalog, error) {
	var c Catalog
	if len(b) > maxCatalogBytes {
		return nil, fmt.Errorf("catalog: %d bytes is more than a catalog can be (%d)", len(b), maxCatalogBytes)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if c.Version != 1 {
		return nil, fmt.Errorf("catalog: version %d is not one this Hearth reads (1); a newer Hearth may", c.Version)
	}
	if _, err := time.Parse(time.DateOnly, c.Updated); err != nil {
		return nil, fmt.Errorf("catalog: updated %s is not a date (YYYY-MM-DD)", QuoteName(c.Updated))
	}
	if len(c.Models) == 0 {
		return nil, errors.New("catalog: no models")
	}
	owner := map[string]string{}
	for i := range c.Models {
		e := &c.Models[i]
		if err := e.derive(); err != nil {
			return nil, fmt.Errorf("catalog: model %d (%s): %w", i+1, QuoteName(e.Repo), err)
		}
		for _, n := range e.Names {
			if prev, ok := owner[n]; ok {
				return nil, fmt.Errorf("catalog: name %q names both %s and %s", n, prev, e.Repo)
			}
			owner[n] = e.Repo
		}
	}
	return &c, nil
}

// derive checks e and fills the fields read from its config.
func (e *CatalogEntry) derive() error {
	if len(e.Names) == 0 {
		return errors.New("no names")
	}
	for _, n := range e.Names {
		if !validShortName(n) {
			return fmt.Errorf("name %s is not a short name (lower case letters, digits, '.', '-', '_', and one :tag other than :latest)", QuoteName(n))
		}
	}
	if !strings.Contains(e.Repo, "/") {
		return fmt.Errorf("repo %s is not of the form org/name", QuoteName(e.Repo))
	}
	if err := CheckRepoID(e.Repo); err != nil {
		return err
	}
	if e.Params <= 0 || e.Bytes <= 0 {
		return fmt.Errorf("parameters %d and size_bytes %d must be positive", e.Params, e.Bytes)
	}
	cfg, err := config.Parse(e.Config, nil)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	e.ModelType, e.ContextTokens = cfg.ModelType, cfg.MaxPositionEmbeddings
	e.Shape = families.Shape(cfg, e.Bytes)
	e.Family, e.Tier, e.Capabilities = "", TierUnsupported, []string{}
	if fam, err := families.Resolve(cfg); err == nil {
		// A catalog entry's towers are those its config describes and
		// Hearth runs (the pulled files then decide, from the tensors).
		towers := families.Towers(cfg, fam)
		if !cfg.HasVisionConfig {
			towers &^= family.Vision
		}
		if !cfg.HasAudioConfig {
			towers &^= family.Audio
		}
		e.Family, e.Tier, e.Capabilities = fam.Name, string(fam.Tier), capabilities(fam.Caps|towers, towers)
	}
	return nil
}

// validShortName accepts "name" or "name:tag": lower case letters,
// digits, '.', '-' and '_', each part starting with a letter or digit. The
// tag is not "latest", which means the untagged name (Lookup).
func validShortName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	base, tag, hasTag := strings.Cut(n, ":")
	part := func(s string) bool {
		if s == "" || s[0] == '.' || s[0] == '-' || s[0] == '_' {
			return false
		}
		for _, r := range s {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
				return false
			}
		}
		return true
	}
	return part(base) && (!hasTag || part(tag) && tag != "latest")
}

// BuiltinCatalog is the catalog embedded in the binary.
func BuiltinCatalog() *Catalog {
	c, err := builtinCatalog()
	if err != nil {
		panic("the built-in catalog.json is broken: " + err.Error()) // TestBuiltinCatalog keeps it whole
	}
	return c
}

var builtinCatalog = sync.OnceValues(func() (*Catalog, error) { return ParseCatalog(builtinCatalogJSON) })

// LoadCatalog is the catalog to use: the one at path (written by
// FetchCatalog) when it is there and no older than the built-in one, else
// the built-in one. A file that cannot be read or parsed is ignored; the
// error then says why, and the catalog is the built-in one.
func LoadCatalog(path string) (*Catalog, error) {
	builtin := BuiltinCatalog()
	if path == "" {
		return builtin, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return builtin, nil
	}
	if err != nil {
		return builtin, err
	}
	c, err := ParseCatalog(b)
	if err != nil {
		return builtin, fmt.Errorf("%s: %w", path, err)
	}
	if c.Updated < builtin.Updated { // a Hearth upgrade brought a newer one
		return builtin, nil
	}
	return c, nil
}

// FetchCatalog downloads a catalog from url, checks it (ParseCatalog) and
// writes it to path, where LoadCatalog finds it. A server that cannot be
// reached gets an *OfflineError.
func FetchCatalog(ctx context.Context, client *http.Client, url, path string) (*Catalog, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", url, err)
	}
	req.Header.Set("User-Agent", "hearth")
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("catalog: %w", reachError(url, err, "reach "+url))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("catalog: %s answered %s", url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxCatalogBytes+1))
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", url, err)
	}
	c, err := ParseCatalog(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	// Write beside it and rename, so a reader never sees half a file.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".catalog-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	return c, nil
}

// Lookup finds the entry a short name names: any of its names, in any
// case, with Ollama's ":latest" tag or without.
func (c *Catalog) Lookup(name string) (CatalogEntry, bool) {
	n := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ":latest")
	for _, e := range c.Models {
		if slices.Contains(e.Names, n) {
			return e, true
		}
	}
	return CatalogEntry{}, false
}

// PullTarget is what a name given to pull stands for, as "org/name" or
// "org/name@revision": a repo id as it is (checked by ParseName), or a
// catalog short name ("llama3.2", "qwen3:8b", "gemma3:1b@<commit>") as its
// repo. A name without a slash that the catalog lacks wraps ErrNotFound,
// with the nearest catalog names.
func (c *Catalog) PullTarget(name string) (string, error) {
	name = strings.TrimSpace(name)
	short, rev, hasRev := strings.Cut(name, "@")
	if strings.Contains(short, "/") || c == nil {
		if _, _, err := ParseName(name); err != nil {
			return "", err
		}
		return name, nil
	}
	if !validShortName(strings.TrimSuffix(strings.ToLower(short), ":latest")) {
		if _, _, err := ParseName(name); err != nil {
			return "", err // say what is wrong with it, as for a repo id
		}
	}
	e, ok := c.Lookup(short)
	if !ok {
		return "", c.unknown(short)
	}
	if hasRev {
		if err := checkRevision(rev); err != nil {
			return "", err
		}
		return e.Repo + "@" + rev, nil
	}
	return e.Repo, nil
}

// unknown is the error for a short name the catalog lacks.
func (c *Catalog) unknown(name string) error {
	msg := fmt.Sprintf("%s is not in Hearth's model catalog", QuoteName(name))
	if near := c.Suggest(name); len(near) > 0 {
		msg += " (did you mean " + strings.Join(near, ", ") + "?)"
	}
	return fmt.Errorf("%w: %s; name a Hugging Face repo as org/name, or run hearth ls --available for the catalog", ErrNotFound, msg)
}

// WithCatalog makes r resolve c's short names ("llama3.2", "qwen3:8b")
// to the cached snapshot of their repo, after every other kind of name
// (Resolve, ResolveName), and returns r.
func (r *Registry) WithCatalog(c *Catalog) *Registry {
	r.catalog = c
	return r
}

// Catalog is the catalog r resolves short names with (nil without
// WithCatalog).
func (r *Registry) Catalog() *Catalog { return r.catalog }

// resolveCatalog finds a catalog short name's repo in the cache; ok is
// false when name is not in the catalog. A name the catalog has whose
// repo is not downloaded wraps ErrNotFound with the pull to run.
func (r *Registry) resolveCatalog(name, rev string, hasRev bool) (rec Record, ok bool, err error) {
	if r.catalog == nil {
		return Record{}, false, nil
	}
	e, found := r.catalog.Lookup(name)
	if !found {
		return Record{}, false, nil
	}
	if rec, ok, err := r.resolveRepo(e.Repo, rev, hasRev); ok {
		return rec, true, err
	}
	return Record{}, true, fmt.Errorf("%w: %s (%s) is not downloaded yet; run hearth pull %s", ErrNotFound, QuoteName(name), e.Repo, name)
}

// maxSuggestions bounds the names a "did you mean" offers.
const maxSuggestions = 4

// Suggest returns up to four catalog names near name, one per model: the
// other tags of the same model first ("gemma3:4b" → gemma3:1b), in catalog
// order, then the closest by spelling (see closest).
func (c *Catalog) Suggest(name string) []string {
	q := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ":latest")
	if len(q) > maxNameShown {
		return nil
	}
	base, _, _ := strings.Cut(q, ":")
	var (
		out, all []string
		repoOf   = map[string]string{} // name → its entry's repo
		taken    = map[string]bool{}   // repos suggested
	)
	add := func(n string) {
		if len(out) < maxSuggestions && !taken[repoOf[n]] {
			out, taken[repoOf[n]] = append(out, n), true
		}
	}
	for _, e := range c.Models {
		for _, n := range e.Names {
			all, repoOf[n] = append(all, n), e.Repo
		}
		for _, n := range e.Names {
			if b, _, _ := strings.Cut(n, ":"); b == base {
				add(e.Name())
				break
			}
		}
	}
	for _, n := range closest(q, all, len(all)) {
		add(n)
	}
	return out
}

// Offer is a catalog entry judged for this machine.
type Offer struct {
	CatalogEntry
	Fit         *fit.Verdict // nil when the machine's memory is unknown
	Downloaded  bool         // the repo has a snapshot in the cache
	Recommended bool         // the first model to pull on this machine (at most one; Offers says which)
}

// Offers judges every entry this build can run (entries of an unsupported
// model_type, from a catalog newer than the binary, are left out) and
// ranks them, best for this machine first: those that fit, then tight,
// then those that won't fit, each group in catalog order (the catalog's
// preference). Recommended is the first that fits within FirstPullBytes,
// else the first that fits, else the first that is tight; none is when
// nothing fits or judge is nil. judge is
// FitAt's (nil when memory is unknown); downloaded reports whether a repo
// is in the cache (nil: none is).
func (c *Catalog) Offers(judge func(Record) fit.Verdict, downloaded func(repo string) bool) []Offer {
	var out []Offer
	for _, e := range c.Models {
		if e.Tier == TierUnsupported {
			continue
		}
		o := Offer{CatalogEntry: e}
		if judge != nil {
			v := judge(e.record())
			o.Fit = &v
		}
		if downloaded != nil {
			o.Downloaded = downloaded(e.Repo)
		}
		out = append(out, o)
	}
	rank := func(o Offer) int {
		if o.Fit == nil {
			return 0
		}
		switch o.Fit.Status {
		case fit.Fits:
			return 0
		case fit.Tight:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(out, func(a, b Offer) int { return rank(a) - rank(b) })
	pick := slices.IndexFunc(out, func(o Offer) bool { return rank(o) == 0 && o.Fit != nil && o.Bytes <= FirstPullBytes })
	if pick < 0 && len(out) > 0 && out[0].Fit != nil && rank(out[0]) < 2 {
		pick = 0
	}
	if pick >= 0 {
		out[pick].Recommended = true
	}
	return out
}

// FirstPullBytes caps the download of the model Offers recommends when
// one that fits is that small: a newcomer's first real model should
// arrive in minutes (6 GB is about eight minutes at 100 Mbit/s), and the
// 8B class is where chat gets good. The bigger models that fit still rank
// first in the list.
const FirstPullBytes = 6e9

// OfferTable writes the `hearth ls --available` table: the short name,
// the repo, tier, size (with "~" when estimated), parameters,
// quantization, context, the fit verdict as `hearth ls` gives it, and a
// note (recommended, downloaded, the entry's other names).
func OfferTable(w io.Writer, offers []Offer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"NAME", "REPO", "TIER", "SIZE", "PARAMS", "QUANT", "CONTEXT", "FIT", "NOTE"}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, o := range offers {
		sz := size(o.Bytes)
		if o.Estimated {
			sz = "~" + sz
		}
		verdict := "-"
		if o.Fit != nil {
			v := *o.Fit
			verdict = fitCell(o.record(), func(Record) fit.Verdict { return v })
		}
		var notes []string
		if o.Recommended {
			notes = append(notes, "recommended")
		}
		if o.Downloaded {
			notes = append(notes, "downloaded")
		}
		if len(o.Names) > 1 {
			notes = append(notes, "also "+strings.Join(o.Names[1:], ", "))
		}
		row := []string{o.Name(), o.Repo, o.Tier, sz, FormatParams(o.Params), dash(o.Quantization), ctxLabel(o.ContextTokens), verdict, strings.Join(notes, "; ")}
		fmt.Fprintln(tw, strings.TrimRight(strings.Join(row, "\t"), "\t"))
	}
	return tw.Flush()
}
