// Turning the menu's state into rows: a pure function, so the tests can
// table every state.

package main

import (
	"fmt"
	"slices"
	"strings"

	"hearth/engine/fit"
	"hearth/engine/pool"
	"hearth/engine/registry"
)

// menuItem is one row of the menu.
type menuItem struct {
	ID        string // what Activate takes; "" for a separator
	Title     string
	Tooltip   string
	Separator bool
	Hidden    bool
	Disabled  bool
	Checkable bool
	Checked   bool
	Children  []menuItem // a submenu
}

// menuView is the menu and its icon.
type menuView struct {
	// Items are the top-level rows. The sequence of ids is the same in
	// every state (rows hide rather than vanish), because a menu-bar menu
	// cannot insert rows between others once it is drawn.
	Items []menuItem
	// Busy is true while a request runs, a model loads or a pull
	// downloads: the icon shows its busy variant.
	Busy bool
	// Tooltip is the icon's tooltip.
	Tooltip string
}

// renderMenu lays out the menu for s.
func renderMenu(s menuState) menuView {
	loaded, hasLoaded := firstLoaded(s.Loaded)
	status := statusLine(s, loaded, hasLoaded)
	v := menuView{Tooltip: "Hearth: " + status}
	v.Busy = s.Loading != "" || s.Pulling != ""
	for _, l := range s.Loaded {
		v.Busy = v.Busy || l.Active > 0
	}

	activity := activityLine(s)
	model, fidelity := "Model: none loaded", ""
	if hasLoaded {
		model = fmt.Sprintf("Model: %s (%s tier)", loaded.ID, loaded.Tier)
		if m := mediaCaps(loaded.Capabilities); m != "" {
			model = fmt.Sprintf("Model: %s (%s tier, %s)", loaded.ID, loaded.Tier, m)
		}
		if more := len(s.Loaded) - 1; more > 0 {
			// The pool keeps several; the line names the one used last.
			model += fmt.Sprintf(" + %d more loaded", more)
		}
		fidelity = loaded.Fidelity
	}
	pull := "Pull a Model…"
	if s.Pulling != "" {
		pull = fmt.Sprintf("Pull a Model… (pulling %s)", s.Pulling)
	}
	login := menuItem{ID: rowLogin, Title: "Launch at Login", Checkable: true, Checked: s.Login}
	if s.LoginErr != nil {
		login.Title, login.Disabled = "Launch at Login (unavailable: "+s.LoginErr.Error()+")", true
	}
	noURL := s.URL == ""
	v.Items = []menuItem{
		{ID: rowStatus, Title: status, Disabled: true},
		{ID: rowActivity, Title: activity, Disabled: true, Hidden: activity == ""},
		{ID: rowModel, Title: model, Tooltip: fidelity, Disabled: true},
		{ID: rowFidelity, Title: "Fidelity: " + fidelity, Disabled: true, Hidden: fidelity == ""},
		{ID: rowMemory, Title: memoryLine(s, loaded, hasLoaded), Disabled: true},
		{Separator: true},
		{ID: rowModels, Title: "Models", Children: modelRows(s)},
		{ID: rowChat, Title: "Open Chat", Tooltip: s.URL + "/", Disabled: noURL},
		{ID: rowPull, Title: pull, Disabled: s.Pulling != ""},
		{Separator: true},
		login,
		{ID: rowCopy, Title: "Copy API URL", Tooltip: s.URL + "/v1", Disabled: noURL},
		{Separator: true},
		{ID: rowQuit, Title: "Quit Hearth"},
	}
	return v
}

func firstLoaded(l []pool.Status) (pool.Status, bool) {
	if len(l) == 0 {
		return pool.Status{}, false
	}
	return l[0], true
}

// statusLine says where the engine runs and on which backend.
func statusLine(s menuState, loaded pool.Status, hasLoaded bool) string {
	switch {
	case s.EngineErr != nil:
		return "Engine stopped: " + s.EngineErr.Error()
	case s.URL == "":
		return "Engine starting…"
	}
	at := "Engine at " + strings.TrimPrefix(s.URL, "http://")
	if !hasLoaded {
		return at + " · no model loaded"
	}
	return at + " · " + loaded.Backend
}

// activityLine shows a pull or load in progress, or the last failure.
func activityLine(s menuState) string {
	switch {
	case s.Pulling != "":
		p := s.Progress
		if p.Status != registry.StatusDownloading || p.Total <= 0 {
			return fmt.Sprintf("Pulling %s…", s.Pulling)
		}
		return fmt.Sprintf("Pulling %s: %d%% of %s", s.Pulling, p.Completed*100/p.Total, fit.FormatBytes(p.Total))
	case s.Loading != "":
		return fmt.Sprintf("Loading %s…", s.Loading)
	case s.Failure != "":
		return "⚠ " + capitalize(s.Failure)
	}
	return ""
}

// memoryLine is free memory, and the loaded model's fit.
func memoryLine(s menuState, loaded pool.Status, hasLoaded bool) string {
	if s.MemoryErr != nil {
		return "Memory: unknown (" + s.MemoryErr.Error() + ")"
	}
	free := fmt.Sprintf("%s free of %s", fit.FormatBytes(s.Memory.AvailableBytes), fit.FormatBytes(s.Memory.TotalBytes))
	if !hasLoaded {
		return "Memory: " + free
	}
	rec, ok := recordOf(s.Records, loaded)
	if !ok || rec.Shape.WeightBytes == 0 {
		return fmt.Sprintf("Memory: %s weights; %s", fit.FormatBytes(loaded.WeightBytes), free)
	}
	v := loadedVerdict(s, rec, loaded)
	return fmt.Sprintf("Memory: %s (needs %s at %s context); %s", v.Status, fit.FormatBytes(v.NeedBytes), ctxTokensLabel(v.ContextTokens), free)
}

// loadedVerdict judges the loaded model at its own context. It already
// occupies about what it needs, so it is judged against free memory plus
// that: would it fit if it were loaded again now.
func loadedVerdict(s menuState, rec registry.Record, loaded pool.Status) fit.Verdict {
	need := registry.FitAt(s.Memory, loaded.ContextTokens)(rec).NeedBytes
	m := s.Memory
	m.AvailableBytes = min(m.AvailableBytes+need, m.TotalBytes)
	return registry.FitAt(m, loaded.ContextTokens)(rec)
}

// recordOf finds the loaded model's record, by directory.
func recordOf(recs []registry.Record, loaded pool.Status) (registry.Record, bool) {
	for _, r := range recs {
		if r.Dir == loaded.Dir {
			return r, true
		}
	}
	return registry.Record{}, false
}

// modelRows is the Models submenu: every model on this machine with its
// tier and fit; choosing one loads it. Models that cannot load are
// disabled and say why.
func modelRows(s menuState) []menuItem {
	if s.ListErr != nil {
		return []menuItem{{ID: rowModels + ":error", Title: "Cannot list models: " + s.ListErr.Error(), Disabled: true}}
	}
	var rows []menuItem
	for _, r := range s.Records {
		loaded, isLoaded := loadedAs(s.Loaded, r)
		rows = append(rows, modelRow(s, r, loaded, isLoaded))
	}
	if len(rows) == 0 {
		rows = append(rows, menuItem{ID: rowModels + ":none", Title: "No models yet: use Pull a Model…", Disabled: true})
	}
	return rows
}

// loadedAs finds r among the loaded models, by directory.
func loadedAs(loaded []pool.Status, r registry.Record) (pool.Status, bool) {
	for _, l := range loaded {
		if l.Dir == r.Dir {
			return l, true
		}
	}
	return pool.Status{}, false
}

// modelRow is one model of the submenu; loaded is its pool status when
// isLoaded.
func modelRow(s menuState, r registry.Record, loaded pool.Status, isLoaded bool) menuItem {
	name := r.Name()
	row := menuItem{ID: rowLoad + name, Checkable: true}
	row.Checked = isLoaded
	switch {
	case r.Drafter:
		row.Title, row.Disabled = name+" — draft model (used beside a target model)", true
		return row
	case !r.Servable() || r.Tier == registry.TierUnsupported:
		row.Title, row.Disabled = name+" — unsupported: "+firstLineOf(r.Reason), true
		row.Tooltip = r.Reason
		return row
	}
	row.Tooltip = fmt.Sprintf("%s tier (%s), %s", r.Tier, r.Family, fit.FormatBytes(r.Bytes))
	if r.Quantization != "" {
		row.Tooltip += ", " + r.Quantization
	}
	if r.Fidelity != "" {
		row.Tooltip += "; " + r.Fidelity
	}
	// What the model takes besides text: the engine's word once it is
	// loaded, else the registry's (its towers, where its family runs them).
	caps := r.Capabilities
	if isLoaded {
		caps = loaded.Capabilities
	}
	if len(caps) > 0 {
		row.Tooltip += "; " + strings.Join(caps, ", ")
	}
	media := ""
	if m := mediaCaps(caps); m != "" {
		media = " · " + m
	}
	if s.MemoryErr != nil {
		row.Title = fmt.Sprintf("%s — %s%s", name, r.Tier, media)
		return row
	}
	v := registry.FitAt(s.Memory, s.ContextTokens)(r)
	if isLoaded {
		v = loadedVerdict(s, r, loaded)
	}
	switch {
	case v.Status == fit.WontFit:
		row.Disabled = true
		row.Title = fmt.Sprintf("%s — won't fit: needs %s at %s context, %s available", name, fit.FormatBytes(v.NeedBytes), ctxTokensLabel(v.ContextTokens), fit.FormatBytes(v.BudgetBytes))
		if isLoaded {
			row.Disabled = false // it is loaded; it stays choosable
		}
	default:
		row.Title = fmt.Sprintf("%s — %s · %s%s", name, r.Tier, v.Status, media)
	}
	if s.Loading == name {
		row.Title += " (loading…)"
	}
	return row
}

// mediaCaps names the capabilities beyond text and tools a model has
// (vision, video, audio, transcription), as the menu shows them; "" for
// none.
func mediaCaps(caps []string) string {
	var out []string
	for _, c := range []string{"vision", "video", "audio", "transcription"} {
		if slices.Contains(caps, c) {
			out = append(out, c)
		}
	}
	return strings.Join(out, ", ")
}

// ctxTokensLabel prints a context length as hearth ls does ("8K").
func ctxTokensLabel(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprintf("%dK", n/1024)
	}
	return fmt.Sprint(n)
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
