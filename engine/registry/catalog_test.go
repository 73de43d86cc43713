package registry

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hearth/engine/fit"
	"hearth/internal/testmodels"
)

// TestBuiltinCatalog: the shipped catalog parses, lists only models this
// build runs, has the names Ollama users type, and its estimates hold
// together (a size far from parameters × 4.5 bits is a typo).
func TestBuiltinCatalog(t *testing.T) {
	c, err := ParseCatalog(builtinCatalogJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range c.Models {
		if e.Tier == TierUnsupported {
			t.Errorf("%s (%s): model_type %q is not one this build runs", e.Name(), e.Repo, e.ModelType)
		}
		if !strings.HasPrefix(e.Repo, "mlx-community/") || e.Quantization != "q4g64" {
			t.Errorf("%s: %s %s, want an mlx-community 4-bit repo", e.Name(), e.Repo, e.Quantization)
		}
		if !e.Estimated {
			t.Errorf("%s: not marked estimated, but nothing in the catalog was read from the hub", e.Name())
		}
		if est := float64(e.Params) * 4.5 / 8; float64(e.Bytes) < 0.8*est || float64(e.Bytes) > 1.5*est {
			t.Errorf("%s: %d bytes for %d parameters (4.5 bits each would be %.0f)", e.Name(), e.Bytes, e.Params, est)
		}
		if e.ContextTokens <= 0 || len(e.Shape.Layers) == 0 {
			t.Errorf("%s: context %d, %d layers", e.Name(), e.ContextTokens, len(e.Shape.Layers))
		}
	}
	for _, name := range []string{"llama3.2", "llama3.2:1b", "llama3.2:3b", "qwen3:0.6b", "qwen3:1.7b", "qwen3:4b", "qwen3:8b",
		"gemma3:1b", "mistral", "phi3", "phi4-mini", "smollm3", "granite3.3", "olmo2", "qwen3:30b-a3b"} {
		if _, ok := c.Lookup(name); !ok {
			t.Errorf("the catalog has no %s", name)
		}
	}
	if BuiltinCatalog().Updated != c.Updated {
		t.Errorf("BuiltinCatalog differs from catalog.json")
	}
}

func TestCatalogLookup(t *testing.T) {
	c := BuiltinCatalog()
	tests := []struct{ name, want string }{
		{"llama3.2", "mlx-community/Llama-3.2-3B-Instruct-4bit"},
		{"llama3.2:latest", "mlx-community/Llama-3.2-3B-Instruct-4bit"},
		{"llama3.2:3b", "mlx-community/Llama-3.2-3B-Instruct-4bit"},
		{"LLAMA3.2:1B", "mlx-community/Llama-3.2-1B-Instruct-4bit"},
		{" qwen3 ", "mlx-community/Qwen3-8B-4bit"},
		{"qwen3:30b", "mlx-community/Qwen3-30B-A3B-4bit"},
		{"qwen3:30b-a3b", "mlx-community/Qwen3-30B-A3B-4bit"},
		{"gemma3:1b", "mlx-community/gemma-3-1b-it-4bit"},
		{"gemma3", "mlx-community/gemma-3-4b-it-4bit"}, // Ollama's default tag, the 4B
		{"qwen3:27b", ""},     // no such tag
		{"latest", ""},        // not a name
		{"mistral:7", ""},     // tags are whole
		{"Qwen/Qwen3-8B", ""}, // a repo id is no short name
	}
	for _, tt := range tests {
		e, ok := c.Lookup(tt.name)
		if ok != (tt.want != "") || e.Repo != tt.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tt.name, e.Repo, ok, tt.want)
		}
	}
}

func TestPullTarget(t *testing.T) {
	c := BuiltinCatalog()
	tests := []struct {
		name, want string
		err        error
		contains   string
	}{
		{"Qwen/Qwen3-0.6B", "Qwen/Qwen3-0.6B", nil, ""},
		{"Qwen/Qwen3-0.6B@main", "Qwen/Qwen3-0.6B@main", nil, ""},
		{"qwen3:8b", "mlx-community/Qwen3-8B-4bit", nil, ""},
		{"qwen3:latest", "mlx-community/Qwen3-8B-4bit", nil, ""},
		{"qwen3:8b@0123abc", "mlx-community/Qwen3-8B-4bit@0123abc", nil, ""},
		{"llama3.2", "mlx-community/Llama-3.2-3B-Instruct-4bit", nil, ""},
		{"lama3.2", "", ErrNotFound, `"lama3.2" is not in Hearth's model catalog (did you mean llama3.2`},
		{"qwen3:27b", "", ErrNotFound, "did you mean qwen3:30b-a3b, qwen3:14b, qwen3:8b, qwen3:4b?"},
		{"gemma3:2b", "", ErrNotFound, "did you mean gemma3:27b, gemma3:12b, gemma3:4b, gemma3:1b?"},
		{"Qwen3-0.6B", "", ErrNotFound, "qwen3:0.6b"},
		{"zzzzzzzz", "", ErrNotFound, "is not in Hearth's model catalog; name a Hugging Face repo as org/name"},
		{"../etc", "", ErrInvalidName, "not of the form org/name"},
		{"qwen3:8b@../x", "", ErrInvalidName, "not a branch, tag or commit"},
	}
	for _, tt := range tests {
		got, err := c.PullTarget(tt.name)
		if got != tt.want || !errors.Is(err, tt.err) || tt.err != nil && !strings.Contains(err.Error(), tt.contains) {
			t.Errorf("PullTarget(%q) = %q, %v; want %q, %v containing %q", tt.name, got, err, tt.want, tt.err, tt.contains)
		}
	}
	// Without a catalog only repo ids pass.
	var none *Catalog
	if got, err := none.PullTarget("acme/tiny"); got != "acme/tiny" || err != nil {
		t.Errorf("nil catalog: %q, %v", got, err)
	}
}

func TestSuggest(t *testing.T) {
	c := BuiltinCatalog()
	tests := []struct {
		name string
		want []string // each must be among the suggestions
	}{
		{"mistrall", []string{"mistral"}},
		{"gemma3:4b", []string{"gemma3:1b"}},
		{"phi4", []string{"phi4-mini"}},
		{"granite3", []string{"granite3.3:8b", "granite3.3:2b"}},
		{"smollm", []string{"smollm3"}},
	}
	for _, tt := range tests {
		got := c.Suggest(tt.name)
		for _, w := range tt.want {
			if !slices.Contains(got, w) {
				t.Errorf("Suggest(%q) = %v, want %s among them", tt.name, got, w)
			}
		}
		if len(got) > maxSuggestions {
			t.Errorf("Suggest(%q) = %v: more than %d", tt.name, got, maxSuggestions)
		}
	}
	if got := c.Suggest("xyzzy-plugh"); len(got) != 0 {
		t.Errorf("Suggest of nonsense = %v", got)
	}
}

func TestParseCatalogErrors(t *testing.T) {
	const cfg = `{"model_type": "qwen3", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 512}`
	entry := func(names, repo, config string) string {
		return `{"names": ` + names + `, "repo": "` + repo + `", "parameters": 1000, "size_bytes": 600, "quantization": "q4g64", "config": ` + config + `}`
	}
	doc := func(version, updated string, models ...string) string {
		return `{"version": ` + version + `, "updated": "` + updated + `", "models": [` + strings.Join(models, ",") + `]}`
	}
	ok := entry(`["tiny"]`, "acme/tiny", cfg)
	tests := []struct{ name, doc, contains string }{
		{"not JSON", `{`, "catalog: unexpected end"},
		{"newer version", doc("2", "2030-01-01", ok), "version 2 is not one this Hearth reads"},
		{"bad date", doc("1", "yesterday", ok), `updated "yesterday" is not a date`},
		{"empty", doc("1", "2030-01-01"), "no models"},
		{"no names", doc("1", "2030-01-01", entry(`[]`, "acme/tiny", cfg)), "no names"},
		{"bad name", doc("1", "2030-01-01", entry(`["Tiny Model"]`, "acme/tiny", cfg)), `name "Tiny Model" is not a short name`},
		{"two tags", doc("1", "2030-01-01", entry(`["a:b:c"]`, "acme/tiny", cfg)), "not a short name"},
		{"latest tag", doc("1", "2030-01-01", entry(`["tiny:latest"]`, "acme/tiny", cfg)), "other than :latest"},
		{"repo without org", doc("1", "2030-01-01", entry(`["tiny"]`, "tiny", cfg)), "not of the form org/name"},
		{"bad repo", doc("1", "2030-01-01", entry(`["tiny"]`, "acme/../x", cfg)), "not of the form org/name"},
		{"bad config", doc("1", "2030-01-01", entry(`["tiny"]`, "acme/tiny", `{"model_type": "qwen3"}`)), "config:"},
		{"name twice", doc("1", "2030-01-01", ok, entry(`["small", "tiny"]`, "acme/small", cfg)), `name "tiny" names both acme/tiny and acme/small`},
	}
	for _, tt := range tests {
		if _, err := ParseCatalog([]byte(tt.doc)); err == nil || !strings.Contains(err.Error(), tt.contains) {
			t.Errorf("%s: ParseCatalog = %v, want an error containing %q", tt.name, err, tt.contains)
		}
	}
	c, err := ParseCatalog([]byte(doc("1", "2030-01-01", ok, entry(`["rwkv"]`, "acme/rwkv", `{"model_type": "rwkv7", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 512}`))))
	if err != nil {
		t.Fatal(err)
	}
	// An entry this build cannot run parses (a newer catalog may have
	// it) but is never offered.
	if c.Models[1].Tier != TierUnsupported || len(c.Offers(nil, nil)) != 1 {
		t.Errorf("unsupported entry: tier %q, offers %v", c.Models[1].Tier, c.Offers(nil, nil))
	}
}

// TestOffers ranks the built-in catalog for machines of three sizes.
func TestOffers(t *testing.T) {
	c := BuiltinCatalog()
	rank := map[fit.Status]int{fit.Fits: 0, fit.Tight: 1, fit.WontFit: 2}
	order := map[string]int{}
	for i, e := range c.Models {
		order[e.Repo] = i
	}
	have := func(repo string) bool { return repo == "mlx-community/Qwen3-0.6B-4bit" }
	for _, mem := range []fit.Memory{
		{TotalBytes: 8e9, AvailableBytes: 4e9},
		{TotalBytes: 16e9, AvailableBytes: 9e9},
		{TotalBytes: 128e9, AvailableBytes: 100e9},
	} {
		offers := c.Offers(FitAt(mem, 0), have)
		if len(offers) != len(c.Models) {
			t.Fatalf("%d offers for %d models", len(offers), len(c.Models))
		}
		recommended := 0
		for i, o := range offers {
			if o.Recommended {
				recommended++
				// The first that fits within the first-pull size, when
				// one does: nothing before it that fits is that small.
				if o.Fit.Status != fit.Fits && i != 0 {
					t.Errorf("%v: recommended %s at %d (%s)", mem, o.Name(), i, o.Fit.Status)
				}
				for _, p := range offers[:i] {
					if p.Fit.Status == fit.Fits && (p.Bytes <= FirstPullBytes || o.Bytes > FirstPullBytes) {
						t.Errorf("%v: recommended %s, but %s (%d bytes) fits before it", mem, o.Name(), p.Name(), p.Bytes)
					}
				}
			}
			if o.Downloaded != have(o.Repo) {
				t.Errorf("%s: downloaded %v", o.Name(), o.Downloaded)
			}
			if i == 0 {
				continue
			}
			p := offers[i-1]
			if rank[p.Fit.Status] > rank[o.Fit.Status] || rank[p.Fit.Status] == rank[o.Fit.Status] && order[p.Repo] > order[o.Repo] {
				t.Errorf("%v: %s (%s) ranks before %s (%s)", mem, p.Name(), p.Fit.Status, o.Name(), o.Fit.Status)
			}
		}
		if recommended != 1 {
			t.Errorf("%v: %d recommended, want 1", mem, recommended)
		}
	}
	// The biggest machine lists the catalog's first pick first but
	// recommends the 8B, a download of minutes; a tiny one nothing, since
	// nothing fits.
	big := c.Offers(FitAt(fit.Memory{TotalBytes: 128e9, AvailableBytes: 100e9}, 0), nil)
	if big[0].Repo != c.Models[0].Repo {
		t.Errorf("on 128 GB the first offer is %s, want %s", big[0].Repo, c.Models[0].Repo)
	}
	if i := slices.IndexFunc(big, func(o Offer) bool { return o.Recommended }); i < 0 || big[i].Name() != "qwen3:8b" {
		t.Errorf("on 128 GB the recommendation is offer %d, want qwen3:8b", i)
	}
	for _, o := range c.Offers(FitAt(fit.Memory{TotalBytes: 1e9, AvailableBytes: 5e8}, 0), nil) {
		if o.Recommended || o.Fit.Status != fit.WontFit {
			t.Errorf("on 1 GB: %s %s, recommended %v", o.Name(), o.Fit.Status, o.Recommended)
		}
	}
	// Unknown memory: catalog order, no verdicts, nothing recommended.
	for i, o := range c.Offers(nil, nil) {
		if o.Fit != nil || o.Recommended || o.Repo != c.Models[i].Repo {
			t.Errorf("no judge: offer %d is %s (fit %v, recommended %v)", i, o.Repo, o.Fit, o.Recommended)
		}
	}
}

// testCatalog is a small catalog for the table golden, so that it does
// not move whenever the built-in catalog is curated.
const testCatalog = `{"version": 1, "updated": "2030-01-01", "models": [
  {"names": ["qwen3:8b", "qwen3"], "repo": "mlx-community/Qwen3-8B-4bit", "parameters": 8190000000, "size_bytes": 4607000000, "estimated": true, "quantization": "q4g64",
    "config": {"model_type": "qwen3", "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960}},
  {"names": ["qwen3:30b-a3b"], "repo": "mlx-community/Qwen3-30B-A3B-4bit", "parameters": 30532000000, "size_bytes": 17174000000, "estimated": true, "quantization": "q4g64",
    "config": {"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960}},
  {"names": ["llama3.2:1b"], "repo": "mlx-community/Llama-3.2-1B-Instruct-4bit", "parameters": 1236000000, "size_bytes": 695000000, "quantization": "q4g64",
    "config": {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072}}
]}`

func TestOfferTableGolden(t *testing.T) {
	c, err := ParseCatalog([]byte(testCatalog))
	if err != nil {
		t.Fatal(err)
	}
	have := func(repo string) bool { return repo == "mlx-community/Llama-3.2-1B-Instruct-4bit" }
	var buf bytes.Buffer
	for _, mem := range []fit.Memory{{TotalBytes: 64e9, AvailableBytes: 48e9}, {TotalBytes: 16e9, AvailableBytes: 9e9}} {
		buf.WriteString("# " + fit.FormatBytes(mem.TotalBytes) + ", " + fit.FormatBytes(mem.AvailableBytes) + " free\n")
		if err := OfferTable(&buf, c.Offers(FitAt(mem, 0), have)); err != nil {
			t.Fatal(err)
		}
	}
	buf.WriteString("# memory unknown\n")
	if err := OfferTable(&buf, c.Offers(nil, nil)); err != nil {
		t.Fatal(err)
	}
	golden(t, "available.golden", buf.Bytes())
}

func TestLoadCatalog(t *testing.T) {
	dir := t.TempDir()
	builtin := BuiltinCatalog()
	path := filepath.Join(dir, "catalog.json")
	if c, err := LoadCatalog(path); c != builtin || err != nil {
		t.Errorf("no file: %v, %v", c.Updated, err)
	}
	newer := strings.Replace(testCatalog, "2030-01-01", "2999-01-01", 1)
	os.WriteFile(path, []byte(newer), 0o644)
	if c, err := LoadCatalog(path); err != nil || c.Updated != "2999-01-01" {
		t.Errorf("newer file: %v, %v", c.Updated, err)
	}
	older := strings.Replace(testCatalog, "2030-01-01", "2000-01-01", 1)
	os.WriteFile(path, []byte(older), 0o644)
	if c, err := LoadCatalog(path); c != builtin || err != nil {
		t.Errorf("older file: got %v, %v; want the built-in catalog", c.Updated, err)
	}
	os.WriteFile(path, []byte(`{"version": 1`), 0o644)
	if c, err := LoadCatalog(path); c != builtin || err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("broken file: got %v, %v; want the built-in catalog and an error naming the file", c.Updated, err)
	}
}

func TestFetchCatalog(t *testing.T) {
	body := strings.Replace(testCatalog, "2030-01-01", "2999-01-01", 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/catalog.json":
			w.Write([]byte(body))
		case "/broken.json":
			w.Write([]byte(`{"version": 7}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "hearth", "catalog.json")
	c, err := FetchCatalog(context.Background(), nil, srv.URL+"/catalog.json", path)
	if err != nil || len(c.Models) != 3 {
		t.Fatalf("FetchCatalog = %v, %v", c, err)
	}
	if got, err := LoadCatalog(path); err != nil || got.Updated != "2999-01-01" {
		t.Errorf("after the fetch LoadCatalog = %v, %v", got.Updated, err)
	}
	for _, tt := range []struct{ path, contains string }{
		{"/missing.json", "404 Not Found"},
		{"/broken.json", "version 7 is not one this Hearth reads"},
	} {
		if _, err := FetchCatalog(context.Background(), nil, srv.URL+tt.path, path); err == nil || !strings.Contains(err.Error(), tt.contains) {
			t.Errorf("%s: %v, want an error containing %q", tt.path, err, tt.contains)
		}
	}
	// A failed fetch keeps the catalog there was.
	if got, _ := LoadCatalog(path); got.Updated != "2999-01-01" {
		t.Errorf("a failed fetch replaced the catalog: %v", got.Updated)
	}
	var off *OfflineError
	if _, err := FetchCatalog(context.Background(), nil, "http://"+closedPort(t)+"/catalog.json", path); !errors.As(err, &off) || !strings.Contains(err.Error(), "cannot reach 127.0.0.1 (offline?)") {
		t.Errorf("closed port: %v, want an OfflineError", err)
	}
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestPullOffline: a hub that cannot be reached is one sentence that says
// so, not the transport's error chain.
func TestPullOffline(t *testing.T) {
	cache := t.TempDir()
	err := Pull(context.Background(), PullOptions{Endpoint: "http://" + closedPort(t), CacheDir: cache, Repo: "acme/tiny"}, nil)
	var (
		off *OfflineError
		hub *HubError
	)
	if !errors.As(err, &off) || !errors.As(err, &hub) {
		t.Fatalf("Pull = %v, want an OfflineError inside a HubError", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "pull acme/tiny: cannot reach 127.0.0.1 (offline?): ") || strings.Contains(msg, "reach the hub") ||
		strings.Contains(msg, `Get "`) || strings.Contains(msg, "\n") {
		t.Errorf("offline message: %q", msg)
	}
}

func TestReachError(t *testing.T) {
	const u = "https://huggingface.co/api/models/acme/tiny/revision/main"
	dns := &url.Error{Op: "Get", URL: u, Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "no such host", Name: "huggingface.co", IsNotFound: true}}}
	refused := &url.Error{Op: "Get", URL: "https://cdn-lfs.hf.co/x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}
	reset := &url.Error{Op: "Get", URL: u, Err: &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}}
	tests := []struct {
		name    string
		err     error
		offline bool
		want    string
	}{
		{"no DNS", dns, true, "cannot reach huggingface.co (offline?): lookup huggingface.co: no such host"},
		{"refused, at the CDN", refused, true, "cannot reach cdn-lfs.hf.co (offline?): dial tcp: connect: connection refused"},
		{"reset mid-answer", reset, false, "reach the hub: Get"},
	}
	for _, tt := range tests {
		err := reachError(u, tt.err, "reach the hub")
		var off *OfflineError
		if errors.As(err, &off) != tt.offline || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: %v (offline %v), want %q", tt.name, err, errors.As(err, &off), tt.want)
		}
	}
}

// TestResolveCatalogName: with the catalog, a short name resolves to its
// repo's snapshot once pulled, and before that says what to pull.
func TestResolveCatalogName(t *testing.T) {
	cache := t.TempDir()
	fakeRepo(t, cache, "mlx-community/Qwen3-0.6B-4bit", commit("a"), modelFiles(t, "qwen3-q4g64"), "main")
	reg := New(cache).WithCatalog(BuiltinCatalog())
	for _, name := range []string{"qwen3:0.6b", "QWEN3:0.6B", "qwen3:0.6b@main"} {
		for _, resolve := range []func(string) (Record, error){reg.Resolve, reg.ResolveName} {
			if rec, err := resolve(name); err != nil || rec.ID != "mlx-community/Qwen3-0.6B-4bit" {
				t.Errorf("resolve %q = %s, %v", name, rec.ID, err)
			}
		}
	}
	_, err := reg.ResolveName("qwen3:8b")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"qwen3:8b" (mlx-community/Qwen3-8B-4bit) is not downloaded yet; run hearth pull qwen3:8b`) {
		t.Errorf("resolve a catalog name not pulled: %v", err)
	}
	// Without the catalog, short names are the cache's only.
	if _, err := New(cache).Resolve("qwen3:0.6b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("no catalog: %v", err)
	}
}

// TestCatalogVision: an entry whose config describes a tower Hearth runs
// shows the capability before any pull; a text-only one does not.
func TestCatalogVision(t *testing.T) {
	c := BuiltinCatalog()
	for name, want := range map[string]bool{"gemma3:4b": true, "gemma3:27b": true, "gemma3:1b": false, "qwen3:8b": false} {
		e, ok := c.Lookup(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		if got := slices.Contains(e.Capabilities, "vision"); got != want {
			t.Errorf("%s: capabilities %v", name, e.Capabilities)
		}
	}
}

// TestRecordVision: a pulled checkpoint whose weights hold a tower Hearth
// runs lists the capability before it is loaded; the same model type
// without tower weights does not.
func TestRecordVision(t *testing.T) {
	with := classify(filepath.Join(testmodels.Root(), "gemma3_vision-f32"), "test/gemma3-vision", "", nil, nil)
	without := classify(filepath.Join(testmodels.Root(), "gemma3-f32"), "test/gemma3", "", nil, nil)
	if with.Err() != nil || !slices.Contains(with.Capabilities, "vision") {
		t.Errorf("with a tower: %v, %v", with.Capabilities, with.Err())
	}
	if slices.Contains(without.Capabilities, "vision") {
		t.Errorf("without a tower: %v", without.Capabilities)
	}
}

// TestRecordVideo: `video` is listed before a load where the vision tower
// takes clips and the checkpoint has a video processor (Qwen 3.5, Gemma
// 4), not for Gemma 3's tower, which takes pictures only.
func TestRecordVideo(t *testing.T) {
	for entry, want := range map[string]bool{"qwen3_5_vision-f32": true, "gemma4_vision-f32": true, "gemma3_vision-f32": false} {
		r := classify(filepath.Join(testmodels.Root(), entry), "test/"+entry, "", nil, nil)
		if r.Err() != nil || slices.Contains(r.Capabilities, "video") != want {
			t.Errorf("%s: capabilities %v (%v); video listed should be %v", entry, r.Capabilities, r.Err(), want)
		}
	}
}
