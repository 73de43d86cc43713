// The menu-bar tray: the menu model drawn with systray (Cocoa's status
// item on macOS, which needs cgo; on Linux an appindicator, whose menu is exported on the
// session bus as com.canonical.dbusmenu, with GTK as the fallback).

//go:build (darwin && cgo) || tray

package main

import (
	"context"
	"sync"
	"time"

	"github.com/getlantern/systray"

	"hearth/assets"
)

// trayAvailable reports whether this build can show a menu-bar tray.
const trayAvailable = true

// runTray shows m in the menu bar and blocks until the tray quits (Quit in
// the menu, quitTray, or ctx ending). cleanup runs before the tray is gone:
// on macOS, quitting terminates the process inside the event loop, so
// runTray may never return. It must be called on the main goroutine, which
// systray locks to the main thread.
func runTray(ctx context.Context, m *menuModel, cleanup func()) error {
	t := &tray{m: m, rows: map[string]*trayRow{}}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		<-ctx.Done()
		systray.Quit()
	}()
	systray.Run(func() { t.ready(ctx) }, func() {
		cancel()
		cleanup()
	})
	return nil
}

// quitTray ends runTray.
func quitTray() { systray.Quit() }

// tray keeps the systray items that show the model's rows.
type tray struct {
	m       *menuModel
	mu      sync.Mutex
	rows    map[string]*trayRow // top-level rows by id
	busy    bool
	iconSet bool
}

// trayRow is one systray item and the row it shows now. A submenu's items
// are slots: the i-th shows the i-th child, so its id changes as models
// come and go.
type trayRow struct {
	item  *systray.MenuItem
	mu    sync.Mutex
	shown menuItem
	fresh bool // nothing applied yet, or the user clicked it: apply all
	slots []*trayRow
}

// ready builds the menu from the first view (its layout never changes),
// then keeps it drawn.
func (t *tray) ready(ctx context.Context) {
	v := t.m.View()
	t.mu.Lock()
	for _, it := range v.Items {
		if it.Separator {
			systray.AddSeparator()
			continue
		}
		var mi *systray.MenuItem
		if it.Checkable {
			mi = systray.AddMenuItemCheckbox(it.Title, it.Tooltip, it.Checked)
		} else {
			mi = systray.AddMenuItem(it.Title, it.Tooltip)
		}
		r := &trayRow{item: mi, fresh: true, shown: menuItem{ID: it.ID}}
		t.rows[it.ID] = r
		go t.clicks(r)
	}
	t.mu.Unlock()
	tick := time.NewTicker(menuRefresh)
	defer tick.Stop()
	t.m.Run(ctx, tick.C, t.draw)
}

// clicks hands each click on r to the model, on its own goroutine, since
// a load or a pull takes a while.
func (t *tray) clicks(r *trayRow) {
	for range r.item.ClickedCh {
		r.mu.Lock()
		id := r.shown.ID
		r.fresh = true // GTK toggles a check item itself; redraw it from the model
		r.mu.Unlock()
		go t.m.Activate(id)
	}
}

// draw applies a view to the items, touching only what changed.
func (t *tray) draw(v menuView) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.iconSet || v.Busy != t.busy {
		systray.SetTemplateIcon(assets.MenuIcon(v.Busy))
		t.busy, t.iconSet = v.Busy, true
	}
	systray.SetTooltip(v.Tooltip)
	for _, it := range v.Items {
		r := t.rows[it.ID]
		if r == nil {
			continue
		}
		r.apply(it)
		for i, c := range it.Children {
			if i == len(r.slots) {
				mi := r.item.AddSubMenuItemCheckbox(c.Title, c.Tooltip, c.Checked)
				s := &trayRow{item: mi, fresh: true}
				r.slots = append(r.slots, s)
				go t.clicks(s)
			}
			r.slots[i].apply(c)
		}
		for _, s := range r.slots[min(len(it.Children), len(r.slots)):] {
			s.apply(menuItem{ID: s.shown.ID, Title: s.shown.Title, Hidden: true})
		}
	}
}

// apply shows it on r's item.
func (r *trayRow) apply(it menuItem) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, all := r.shown, r.fresh
	if all || it.Title != old.Title {
		r.item.SetTitle(it.Title)
	}
	if all || it.Tooltip != old.Tooltip {
		r.item.SetTooltip(it.Tooltip)
	}
	if all || it.Disabled != old.Disabled {
		if it.Disabled {
			r.item.Disable()
		} else {
			r.item.Enable()
		}
	}
	if it.Checkable && (all || it.Checked != old.Checked) {
		if it.Checked {
			r.item.Check()
		} else {
			r.item.Uncheck()
		}
	}
	if all || it.Hidden != old.Hidden {
		if it.Hidden {
			r.item.Hide()
		} else {
			r.item.Show()
		}
	}
	r.shown, r.fresh = it, false
}
