// The menu-bar menu as a model: the state it shows, refreshed every few
// seconds, and what choosing a row does. It is platform-free: tray.go draws
// it with systray, menu_view.go turns the state into rows, and the tests
// drive it directly with fakes for the engine and the desktop.

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"hearth/engine/fit"
	"hearth/engine/pool"
	"hearth/engine/registry"
)

// menuRefresh is how often the menu re-reads free memory, the loaded model
// and the models on disk.
const menuRefresh = 3 * time.Second

// desktop is what the menu asks of the desktop session. desktop_darwin.go
// (AppKit through darwinkit) and desktop_linux.go (xdg-open, the clipboard
// tools, notify-send, zenity) implement it.
type desktop interface {
	// OpenURL opens url in the default browser.
	OpenURL(url string) error
	// Copy puts text on the clipboard.
	Copy(text string) error
	// Notify shows a notification.
	Notify(title, body string) error
	// Ask shows a dialog with a text field; ok is false when the user
	// cancels.
	Ask(title, prompt string) (answer string, ok bool, err error)
}

// loginSwitch turns launch at login on and off (loginItem in login.go).
type loginSwitch interface {
	Enabled() (bool, error)
	SetEnabled(on bool) error
}

// menuDeps are what the menu reads and acts through: the functions the
// CLI and the server use (the server's pool, the registry, fit, hearth
// pull's download). Tests pass fakes.
type menuDeps struct {
	// URL is the engine's base URL ("http://127.0.0.1:11435"), or why it
	// is not serving.
	URL func() (string, error)
	// Loaded lists the pool's resident models.
	Loaded func() []pool.Status
	// Models lists the models on this machine, as hearth ls does.
	Models func() ([]registry.Record, error)
	// Memory reads this machine's memory (fit.System).
	Memory func() (fit.Memory, error)
	// Load loads the named model into the server's pool ("" = the
	// default), through the resolver HTTP requests use.
	Load func(ctx context.Context, name string) error
	// Pull downloads a model as hearth pull does.
	Pull func(ctx context.Context, name string, progress func(registry.Progress)) error
	// Describe resolves a pulled model, to say what it is.
	Describe func(name string) (registry.Record, error)
	// Login is the launch-at-login switch; nil where there is none.
	Login loginSwitch
	// Desktop opens URLs, copies, notifies and asks.
	Desktop desktop
	// Quit stops the app.
	Quit func()
	// ContextTokens is the context loads use (0 = the default), at which
	// fit is judged.
	ContextTokens int
}

// menuState is everything the menu shows.
type menuState struct {
	URL       string // "" while the engine starts
	EngineErr error  // why the engine is not serving
	Loaded    []pool.Status
	Memory    fit.Memory
	MemoryErr error
	Records   []registry.Record
	ListErr   error
	Login     bool
	LoginErr  error // also set when there is no login switch
	// ContextTokens is menuDeps.ContextTokens.
	ContextTokens int

	Loading  string // the model being loaded
	Pulling  string // the model being pulled
	Progress registry.Progress
	Failure  string // the last action's failure, until the next action
}

// menuModel holds the menu's state and carries out its actions. It is
// safe for concurrent use: the tray calls Activate from click handlers
// while Run refreshes.
type menuModel struct {
	ctx     context.Context
	deps    menuDeps
	changed chan struct{} // a change waiting to be drawn

	mu sync.Mutex
	st menuState
}

// newMenuModel makes the model; actions run under ctx.
func newMenuModel(ctx context.Context, deps menuDeps) *menuModel {
	return &menuModel{ctx: ctx, deps: deps, changed: make(chan struct{}, 1), st: menuState{ContextTokens: deps.ContextTokens}}
}

// update changes the state and wakes Run to redraw.
func (m *menuModel) update(f func(*menuState)) {
	m.mu.Lock()
	f(&m.st)
	m.mu.Unlock()
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// State returns a copy of the current state.
func (m *menuModel) State() menuState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st
}

// View renders the current state.
func (m *menuModel) View() menuView { return renderMenu(m.State()) }

// Refresh re-reads the engine, memory, the models and the login switch.
func (m *menuModel) Refresh() {
	url, urlErr := m.deps.URL()
	loaded := m.deps.Loaded()
	mem, memErr := m.deps.Memory()
	recs, listErr := m.deps.Models()
	login, loginErr := false, errors.New("not available on this system")
	if m.deps.Login != nil {
		login, loginErr = m.deps.Login.Enabled()
	}
	m.update(func(s *menuState) {
		s.URL, s.EngineErr, s.Loaded = url, urlErr, loaded
		s.Memory, s.MemoryErr = mem, memErr
		s.Records, s.ListErr = recs, listErr
		s.Login, s.LoginErr = login, loginErr
	})
}

// Run refreshes the menu on every tick and draws it after every change,
// until ctx ends. It draws once at the start.
func (m *menuModel) Run(ctx context.Context, tick <-chan time.Time, draw func(menuView)) {
	m.Refresh()
	for {
		select {
		case <-m.changed:
		default:
		}
		draw(m.View())
		select {
		case <-ctx.Done():
			return
		case <-tick:
			m.Refresh()
		case <-m.changed:
		}
	}
}

// Row ids. A model row's id is rowLoad + the model's name.
const (
	rowStatus   = "status"
	rowActivity = "activity"
	rowModel    = "model"
	rowFidelity = "fidelity"
	rowMemory   = "memory"
	rowModels   = "models"
	rowChat     = "chat"
	rowPull     = "pull"
	rowLogin    = "login"
	rowCopy     = "copy"
	rowQuit     = "quit"
	rowLoad     = "load:"
)

// Activate carries out the row's action and returns when it is done (a
// load or a pull takes as long as it takes; the tray calls Activate on its
// own goroutine). A failure is also shown in the menu until the next
// action. Rows without an action do nothing.
func (m *menuModel) Activate(id string) error {
	st := m.State()
	m.update(func(s *menuState) {
		s.Failure = ""
		if id == rowLogin && s.LoginErr == nil {
			s.Login = !st.Login // as the click shows it; Refresh reads the outcome
		}
	})
	var err error
	switch {
	case id == rowChat:
		err = m.needURL(st, func(url string) error { return m.deps.Desktop.OpenURL(url + "/") })
		err = wrapAction("open the chat", err)
	case id == rowCopy:
		err = m.needURL(st, func(url string) error { return m.deps.Desktop.Copy(url + "/v1") })
		err = wrapAction("copy the API URL", err)
	case id == rowLogin:
		if m.deps.Login == nil {
			err = errors.New("launch at login is not available on this system")
		} else {
			err = m.deps.Login.SetEnabled(!st.Login)
		}
		err = wrapAction("change launch at login", err)
		m.Refresh()
	case id == rowPull:
		return m.pull()
	case id == rowQuit:
		m.deps.Quit()
		return nil
	case strings.HasPrefix(id, rowLoad):
		return m.Load(strings.TrimPrefix(id, rowLoad))
	default:
		return nil
	}
	if err != nil {
		m.update(func(s *menuState) { s.Failure = err.Error() })
	}
	return err
}

func wrapAction(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("could not %s: %w", what, err)
}

func (m *menuModel) needURL(st menuState, f func(url string) error) error {
	if st.URL == "" {
		if st.EngineErr != nil {
			return st.EngineErr
		}
		return errors.New("the engine is still starting")
	}
	return f(st.URL)
}

// Load loads the named model ("" = the default) into the server's pool.
func (m *menuModel) Load(name string) error {
	label := name
	if label == "" {
		label = "the default model"
	}
	m.update(func(s *menuState) { s.Loading = label })
	err := m.deps.Load(m.ctx, name)
	m.update(func(s *menuState) {
		s.Loading = ""
		if err != nil {
			s.Failure = fmt.Sprintf("could not load %s: %v", label, err)
		}
	})
	m.Refresh()
	if err != nil {
		return fmt.Errorf("load %s: %w", label, err)
	}
	return nil
}

// pull asks for a repo id, downloads it with progress in the menu, and
// notifies when it is done.
func (m *menuModel) pull() error {
	if p := m.State().Pulling; p != "" {
		return fmt.Errorf("already pulling %s", p)
	}
	name, ok, err := m.deps.Desktop.Ask("Pull a Model", "Hugging Face model to download (org/name, or org/name@revision):")
	if err != nil {
		err = fmt.Errorf("could not ask for a model to pull: %w", err)
		m.update(func(s *menuState) { s.Failure = err.Error() })
		return err
	}
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return nil
	}
	m.update(func(s *menuState) {
		s.Pulling, s.Progress = name, registry.Progress{Repo: name, Status: registry.StatusResolving}
	})
	err = m.deps.Pull(m.ctx, name, func(p registry.Progress) {
		m.update(func(s *menuState) { s.Progress = p })
	})
	m.update(func(s *menuState) {
		s.Pulling = ""
		if err != nil {
			s.Failure = fmt.Sprintf("could not pull %s: %v", name, err)
		}
	})
	m.Refresh()
	if err != nil {
		m.notify("Pull failed", fmt.Sprintf("%s: %v", name, err))
		return fmt.Errorf("pull %s: %w", name, err)
	}
	rec, err := m.deps.Describe(name)
	if err != nil {
		m.notify("Pulled "+name, fmt.Sprintf("Downloaded, but Hearth cannot serve it: %v", err))
		return nil
	}
	m.notify("Pulled "+rec.Name(), fmt.Sprintf("%s tier (%s), %s. Choose it under Models to load it.", rec.Tier, rec.Family, fit.FormatBytes(rec.Bytes)))
	return nil
}

// notify shows a notification; a desktop without notifications gets the
// message in the menu instead.
func (m *menuModel) notify(title, body string) {
	if err := m.deps.Desktop.Notify(title, body); err != nil {
		m.update(func(s *menuState) {
			if s.Failure == "" {
				s.Failure = title + ": " + body
			}
		})
	}
}
