package main

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"hearth/engine"
	"hearth/engine/fit"
	"hearth/engine/pool"
	"hearth/engine/registry"
)

const gb = 1_000_000_000

// testMemory is a 16 GB machine with 10 GB free: a budget of 14 GB.
var testMemory = fit.Memory{TotalBytes: 16 * gb, AvailableBytes: 10 * gb}

// testRecord is a servable model of weightBytes with a small KV cache.
func testRecord(id string, weightBytes int64) registry.Record {
	return registry.Record{
		ID: id, Revision: "0123456789abcdef0123456789abcdef01234567", Refs: []string{"main"},
		Dir: "/hub/" + id, Family: "llama", Tier: registry.TierGeneric, Fidelity: "parity vs transformers 5.17",
		Bytes: weightBytes, Quantization: "q4g64", ContextTokens: 4096,
		Shape: fit.Shape{WeightBytes: weightBytes, Hidden: 256, QDim: 256, Intermediate: 512, Vocab: 1000, MaxContextTokens: 4096,
			Layers: []fit.Layer{{Kind: fit.Full, KVHeads: 1, HeadDim: 64}}},
	}
}

var (
	recSmall = testRecord("acme/small", 1*gb)
	recTight = testRecord("acme/tight", 10*gb)
	recHuge  = testRecord("acme/huge", 20*gb)
	recOdd   = registry.Record{ID: "acme/odd", Dir: "/hub/acme/odd", Tier: registry.TierUnsupported, Reason: `unsupported model_type "rwkv7"`}
	recDraft = func() registry.Record { r := testRecord("acme/small-draft", gb/10); r.Drafter = true; return r }()
)

// loadedSmall is the pool's status with acme/small resident.
var loadedSmall = pool.Status{Info: engine.Info{ID: "acme/small", Dir: "/hub/acme/small", Tier: "generic",
	Fidelity: "parity vs transformers 5.17", Backend: "cpu", ContextTokens: 4096, WeightBytes: gb}}

// loadedTight is the pool's status with acme/tight resident.
var loadedTight = pool.Status{Info: engine.Info{ID: "acme/tight", Dir: "/hub/acme/tight", Tier: "generic",
	Backend: "cpu", ContextTokens: 4096, WeightBytes: 10 * gb}}

// fakeDesktop records what the menu asked of the desktop.
type fakeDesktop struct {
	mu       sync.Mutex
	calls    []string
	answer   string
	answerOK bool
	err      error
}

func (d *fakeDesktop) record(s string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, s)
	return d.err
}

func (d *fakeDesktop) OpenURL(url string) error { return d.record("open " + url) }
func (d *fakeDesktop) Copy(text string) error   { return d.record("copy " + text) }
func (d *fakeDesktop) Notify(title, body string) error {
	return d.record("notify " + title + ": " + body)
}
func (d *fakeDesktop) Ask(title, prompt string) (string, bool, error) {
	err := d.record("ask " + title)
	return d.answer, d.answerOK, err
}

func (d *fakeDesktop) Calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// fakeLogin is a launch-at-login switch in memory.
type fakeLogin struct{ on bool }

func (l *fakeLogin) Enabled() (bool, error)   { return l.on, nil }
func (l *fakeLogin) SetEnabled(on bool) error { l.on = on; return nil }

// newTestMenu makes a menu over fakes: an engine at 127.0.0.1:11435 with
// acme/small loaded, the test records and memory; edit adjusts the deps.
func newTestMenu(t *testing.T, edit ...func(*menuDeps)) (*menuModel, *fakeDesktop) {
	t.Helper()
	d := &fakeDesktop{}
	deps := menuDeps{
		URL:      func() (string, error) { return "http://127.0.0.1:11435", nil },
		Loaded:   func() []pool.Status { return []pool.Status{loadedSmall} },
		Models:   func() ([]registry.Record, error) { return []registry.Record{recSmall, recTight, recHuge}, nil },
		Memory:   func() (fit.Memory, error) { return testMemory, nil },
		Load:     func(ctx context.Context, name string) error { return nil },
		Pull:     func(ctx context.Context, name string, progress func(registry.Progress)) error { return nil },
		Describe: func(name string) (registry.Record, error) { return testRecord(name, gb), nil },
		Login:    &fakeLogin{},
		Desktop:  d,
		Quit:     func() {},
	}
	for _, e := range edit {
		e(&deps)
	}
	m := newMenuModel(context.Background(), deps)
	m.Refresh()
	return m, d
}

func findRow(items []menuItem, id string) menuItem {
	for _, it := range items {
		if it.ID == id {
			return it
		}
		if c := findRow(it.Children, id); c.ID != "" {
			return c
		}
	}
	return menuItem{}
}

func rowIDs(items []menuItem) []string {
	var ids []string
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return ids
}

func TestRenderMenu(t *testing.T) {
	serving := menuState{URL: "http://127.0.0.1:11435", Loaded: []pool.Status{loadedSmall}, Memory: testMemory,
		Records: []registry.Record{recSmall}}
	with := func(f func(*menuState)) menuState { s := serving; f(&s); return s }
	// row: the title (a regexp), then flags "disabled", "hidden", "checked".
	type row struct{ id, title, flags string }
	tests := []struct {
		name  string
		state menuState
		busy  bool
		rows  []row
	}{
		{"starting", menuState{Memory: testMemory}, false, []row{
			{rowStatus, `^Engine starting…$`, "disabled"},
			{rowActivity, `^$`, "disabled hidden"},
			{rowModel, `^Model: none loaded$`, "disabled"},
			{rowFidelity, ``, "disabled hidden"},
			{rowMemory, `^Memory: 10\.0 GB free of 16\.0 GB$`, "disabled"},
			{rowChat, `^Open Chat$`, "disabled"},
			{rowCopy, `^Copy API URL$`, "disabled"},
			{rowQuit, `^Quit Hearth$`, ""},
		}},
		{"engine stopped", menuState{EngineErr: errors.New("listen: address already in use")}, false, []row{
			{rowStatus, `^Engine stopped: listen: address already in use$`, "disabled"},
		}},
		{"serving", serving, false, []row{
			{rowStatus, `^Engine at 127\.0\.0\.1:11435 · cpu$`, "disabled"},
			{rowModel, `^Model: acme/small \(generic tier\)$`, "disabled"},
			{rowFidelity, `^Fidelity: parity vs transformers 5\.17$`, "disabled"},
			{rowMemory, `^Memory: fits \(needs 1\.\d GB at 4K context\); 10\.0 GB free of 16\.0 GB$`, "disabled"},
			{rowModels, `^Models$`, ""},
			{rowChat, `^Open Chat$`, ""},
			{rowPull, `^Pull a Model…$`, ""},
			{rowLogin, `^Launch at Login$`, ""},
			{rowCopy, `^Copy API URL$`, ""},
		}},
		{"served but nothing loaded", with(func(s *menuState) { s.Loaded = nil }), false, []row{
			{rowStatus, `^Engine at 127\.0\.0\.1:11435 · no model loaded$`, "disabled"},
			{rowMemory, `^Memory: 10\.0 GB free of 16\.0 GB$`, "disabled"},
		}},
		{"generating", with(func(s *menuState) { s.Loaded = []pool.Status{{Info: loadedSmall.Info, Active: 2}} }), true, nil},
		{"loading", with(func(s *menuState) { s.Loading = "acme/tight" }), true, []row{
			{rowActivity, `^Loading acme/tight…$`, "disabled"},
		}},
		{"pulling, resolving", with(func(s *menuState) { s.Pulling = "acme/new"; s.Progress.Status = registry.StatusResolving }), true, []row{
			{rowActivity, `^Pulling acme/new…$`, "disabled"},
			{rowPull, `^Pull a Model… \(pulling acme/new\)$`, "disabled"},
		}},
		{"pulling, downloading", with(func(s *menuState) {
			s.Pulling = "acme/new"
			s.Progress = registry.Progress{Status: registry.StatusDownloading, Completed: 300e6, Total: 1.2e9}
		}), true, []row{
			{rowActivity, `^Pulling acme/new: 25% of 1\.2 GB$`, "disabled"},
		}},
		{"a failure", with(func(s *menuState) { s.Failure = "could not load acme/x: boom" }), false, []row{
			{rowActivity, `^⚠ Could not load acme/x: boom$`, "disabled"},
		}},
		{"memory unknown", with(func(s *menuState) { s.MemoryErr = errors.New("no /proc") }), false, []row{
			{rowMemory, `^Memory: unknown \(no /proc\)$`, "disabled"},
		}},
		{"launch at login on", with(func(s *menuState) { s.Login = true }), false, []row{
			{rowLogin, `^Launch at Login$`, "checked"},
		}},
		{"launch at login unavailable", with(func(s *menuState) { s.LoginErr = errors.New("not supported on plan9") }), false, []row{
			{rowLogin, `^Launch at Login \(unavailable: not supported on plan9\)$`, "disabled"},
		}},
	}
	layout := rowIDs(renderMenu(serving).Items)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := renderMenu(tt.state)
			if got := rowIDs(v.Items); !slices.Equal(got, layout) {
				t.Fatalf("layout %q, want %q: the tray cannot insert rows", got, layout)
			}
			if v.Busy != tt.busy {
				t.Errorf("busy = %v, want %v", v.Busy, tt.busy)
			}
			for _, r := range tt.rows {
				it := findRow(v.Items, r.id)
				if r.title != "" && !regexp.MustCompile(r.title).MatchString(it.Title) {
					t.Errorf("%s row %q, want %s", r.id, it.Title, r.title)
				}
				flags := strings.Fields(r.flags)
				if it.Disabled != slices.Contains(flags, "disabled") || it.Hidden != slices.Contains(flags, "hidden") || it.Checked != slices.Contains(flags, "checked") {
					t.Errorf("%s row %+v, want flags %q", r.id, it, r.flags)
				}
			}
		})
	}
}

func TestModelRows(t *testing.T) {
	tests := []struct {
		name    string
		state   menuState
		want    []string // titles, as regexps
		enabled []bool
		checked []bool
	}{
		{
			name: "fit, tight, won't fit, unsupported, draft",
			state: menuState{Memory: testMemory, Loaded: []pool.Status{loadedSmall},
				Records: []registry.Record{recSmall, recTight, recHuge, recOdd, recDraft}},
			want: []string{
				`^acme/small — generic · fits$`,
				`^acme/tight — generic · tight$`,
				`^acme/huge — won't fit: needs 20\.\d GB at 4K context, 14\.0 GB available$`,
				`^acme/odd — unsupported: unsupported model_type "rwkv7"$`,
				`^acme/small-draft — draft model \(used beside a target model\)$`,
			},
			enabled: []bool{true, true, false, false, false},
			checked: []bool{true, false, false, false, false},
		},
		{
			// The pool keeps several models; each loaded one is checked and
			// judged as loaded (its own memory counts as available).
			name: "two loaded",
			state: menuState{Memory: testMemory, Loaded: []pool.Status{loadedTight, loadedSmall},
				Records: []registry.Record{recSmall, recTight, recHuge}},
			want: []string{
				`^acme/small — generic · fits$`,
				`^acme/tight — generic · fits$`,
				`^acme/huge — won't fit`,
			},
			enabled: []bool{true, true, false},
			checked: []bool{true, true, false},
		},
		{
			name:    "loading one",
			state:   menuState{Memory: testMemory, Records: []registry.Record{recSmall, recTight}, Loading: "acme/tight"},
			want:    []string{`^acme/small — generic · fits$`, `^acme/tight — generic · tight \(loading…\)$`},
			enabled: []bool{true, true},
			checked: []bool{false, false},
		},
		{
			name:    "memory unknown: tiers only",
			state:   menuState{MemoryErr: errors.New("x"), Records: []registry.Record{recHuge}},
			want:    []string{`^acme/huge — generic$`},
			enabled: []bool{true},
			checked: []bool{false},
		},
		{
			name:    "no models",
			state:   menuState{Memory: testMemory},
			want:    []string{`^No models yet: use Pull a Model…$`},
			enabled: []bool{false},
			checked: []bool{false},
		},
		{
			name:    "listing fails",
			state:   menuState{Memory: testMemory, ListErr: errors.New("read cache /x: permission denied")},
			want:    []string{`^Cannot list models: read cache /x: permission denied$`},
			enabled: []bool{false},
			checked: []bool{false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := findRow(renderMenu(tt.state).Items, rowModels).Children
			if len(rows) != len(tt.want) {
				t.Fatalf("%d rows %+v, want %d", len(rows), rows, len(tt.want))
			}
			for i, r := range rows {
				if !regexp.MustCompile(tt.want[i]).MatchString(r.Title) {
					t.Errorf("row %d %q, want %s", i, r.Title, tt.want[i])
				}
				if r.Disabled == tt.enabled[i] || r.Checked != tt.checked[i] {
					t.Errorf("row %d %+v: want enabled %v, checked %v", i, r, tt.enabled[i], tt.checked[i])
				}
			}
		})
	}
	// A model row loads by the name the server resolves.
	rows := findRow(renderMenu(menuState{Memory: testMemory, Records: []registry.Record{recSmall}}).Items, rowModels).Children
	if rows[0].ID != rowLoad+"acme/small" || !strings.Contains(rows[0].Tooltip, "generic tier (llama), 1.0 GB, q4g64; parity") {
		t.Errorf("row %+v", rows[0])
	}
}

func TestRenderMenuSeveralLoaded(t *testing.T) {
	busy := loadedSmall
	busy.Active = 1
	v := renderMenu(menuState{URL: "http://127.0.0.1:11435", Memory: testMemory, Loaded: []pool.Status{loadedTight, busy}})
	if got := findRow(v.Items, rowModel).Title; got != "Model: acme/tight (generic tier) + 1 more loaded" {
		t.Errorf("model line %q", got)
	}
	if !v.Busy {
		t.Error("not busy while the second loaded model runs a request")
	}
}

// TestRenderMenuCapabilities: a model that takes pictures says so in its
// row and, loaded, in the model line; loaded, the engine's word wins over
// the registry's (a tower its family cannot run is no vision).
func TestRenderMenuCapabilities(t *testing.T) {
	seeing := testRecord("acme/seeing", gb)
	seeing.Capabilities = []string{"tools", "vision"}
	blind := testRecord("acme/blind", gb)
	rows := findRow(renderMenu(menuState{Memory: testMemory, Records: []registry.Record{seeing, blind}}).Items, rowModels).Children
	if !strings.HasSuffix(rows[0].Title, " · vision") || !strings.Contains(rows[0].Tooltip, "; tools, vision") {
		t.Errorf("vision row %+v", rows[0])
	}
	if strings.Contains(rows[1].Title, "vision") {
		t.Errorf("text-only row %+v", rows[1])
	}
	loaded := pool.Status{Info: engine.Info{ID: "acme/seeing", Dir: seeing.Dir, Tier: "generic", Backend: "cpu", ContextTokens: 4096, WeightBytes: gb,
		Capabilities: []string{"vision"}}}
	v := renderMenu(menuState{URL: "http://127.0.0.1:11435", Memory: testMemory, Records: []registry.Record{seeing}, Loaded: []pool.Status{loaded}})
	if got := findRow(v.Items, rowModel).Title; got != "Model: acme/seeing (generic tier, vision)" {
		t.Errorf("model line %q", got)
	}
	// Loaded without its tower running: no vision, whatever the files say.
	loaded.Capabilities = nil
	v = renderMenu(menuState{URL: "http://127.0.0.1:11435", Memory: testMemory, Records: []registry.Record{seeing}, Loaded: []pool.Status{loaded}})
	if row := findRow(v.Items, rowModels).Children[0]; strings.Contains(row.Title, "vision") {
		t.Errorf("loaded without vision, the row says %q", row.Title)
	}
}
