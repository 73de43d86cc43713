// hearth menu: the server plus the menu-bar tray. The menu's actions go
// through what the CLI and the server use: the server's pool (loads
// resolve as HTTP requests do), the registry (hearth ls), fit, and hearth
// pull's download.

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"

	"hearth/engine/fit"
	"hearth/engine/pool"
	"hearth/engine/registry"
	"hearth/web"
)

// errNoTray is what hearth menu says in a build without a tray.
var errNoTray = errors.New("this hearth was built without the menu-bar tray: build it with -tags tray (needs libayatana-appindicator3-dev and libgtk-3-dev), or use hearth serve and the web chat")

func (c *cli) menu(args []string) error {
	fs := c.flags("menu", "menu [flags]")
	f, err := c.engineFlags(fs)
	if err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("menu: unexpected argument %q (use --model to choose the model)", fs.Arg(0))
	}
	if !trayAvailable {
		return errNoTray
	}
	ctx, stop := signal.NotifyContext(c.context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))

	p, def, err := c.newPool(f)
	if err != nil {
		return err
	}
	eng := &menuEngine{}
	var srv *web.Server
	if ln, err := net.Listen("tcp", f.addr.addr()); err != nil {
		eng.set("", fmt.Errorf("listen: %w", err))
		fmt.Fprintln(c.stderr, "hearth: menu:", err)
	} else {
		srv = c.newServer(f, p, log)
		tcp := ln.Addr().(*net.TCPAddr)
		url := "http://" + net.JoinHostPort(displayHost(tcp.IP), strconv.Itoa(tcp.Port))
		eng.set(url, nil)
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				eng.set("", err)
			}
		}()
		fmt.Fprintf(c.stdout, "hearth %s menu: listening on %s (the menu-bar icon has the controls)\n", version, url)
	}

	exe := executable()
	var login loginSwitch
	if li, err := newLoginItem(c.env, exe); err == nil {
		login = li
	} else {
		login = noLogin{err}
	}
	m := newMenuModel(ctx, menuDeps{
		URL:           eng.get,
		Loaded:        p.Loaded,
		Models:        c.menuModels(def),
		Memory:        fit.System,
		Load:          func(ctx context.Context, name string) error { return loadInto(ctx, p, name) },
		Pull:          c.pullModel,
		Describe:      func(name string) (registry.Record, error) { return c.registry().Resolve(name) },
		Login:         login,
		Desktop:       systemDesktop{env: c.env},
		Quit:          quitTray,
		ContextTokens: *f.rf.ctx,
	})
	if srv != nil {
		go m.Load("") // the default model, as serve loads it, but with the menu up
	}
	var once sync.Once
	cleanup := func() {
		once.Do(func() {
			if srv != nil {
				srv.Shutdown(context.Background()) // drains for --drain, as serve does
			}
			p.Close()
		})
	}
	err = runTray(ctx, m, cleanup)
	cleanup()
	return err
}

// loadInto loads the named model ("" = the default) into p the way a
// request for it would, and lets it stay resident.
func loadInto(ctx context.Context, p *pool.Pool, name string) error {
	_, release, err := p.Get(ctx, name)
	if err != nil {
		return err
	}
	release()
	return nil
}

// menuModels lists what the Models submenu offers: the models the server
// can load by name (the Hugging Face cache) and its default model (the
// built-in one, or the --model directory), named as they are served.
func (c *cli) menuModels(def pool.Model) func() ([]registry.Record, error) {
	return func() ([]registry.Record, error) {
		// The registry already names the built-in model; a --model
		// directory is named the same way, as it is served.
		return registry.New(c.hub().CacheDir).WithBuiltin(registry.Builtin{ID: def.ID, Dir: def.Dir}).List()
	}
}

// noLogin is launch at login where it cannot be had, saying why.
type noLogin struct{ err error }

func (n noLogin) Enabled() (bool, error) { return false, n.err }
func (n noLogin) SetEnabled(bool) error  { return n.err }

// menuEngine is the server's address, or why it is not serving.
type menuEngine struct {
	mu  sync.Mutex
	url string
	err error
}

func (e *menuEngine) set(url string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.url, e.err = url, err
}

func (e *menuEngine) get() (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.url, e.err
}
