package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// dbusMenu is a tray's menu as a desktop panel sees it: the
// StatusNotifierItem object and the com.canonical.dbusmenu object its
// Menu property names.
type dbusMenu struct {
	item dbus.BusObject
	menu dbus.BusObject
}

// menuNode is one row of a dbusmenu layout.
type menuNode struct {
	ID       int32
	Props    map[string]dbus.Variant
	Children []menuNode
}

func (n menuNode) label() string {
	s, _ := n.Props["label"].Value().(string)
	return s
}

// enabled and toggled follow the dbusmenu defaults: enabled unless said
// otherwise; toggle-state 1 is checked.
func (n menuNode) enabled() bool {
	v, ok := n.Props["enabled"]
	b, _ := v.Value().(bool)
	return !ok || b
}

func (n menuNode) toggled() int32 {
	v, ok := n.Props["toggle-state"]
	if !ok {
		return -1
	}
	i, _ := v.Value().(int32)
	return i
}

// ayatanaItemPath is where libayatana-appindicator exports the indicator
// systray creates (its id is "systray").
const ayatanaItemPath = "/org/ayatana/NotificationItem/systray"

// findIndicator finds the StatusNotifierItem the process pid exports.
func findIndicator(conn *dbus.Conn, pid uint32) (*dbusMenu, error) {
	var names []string
	if err := conn.BusObject().Call("org.freedesktop.DBus.ListNames", 0).Store(&names); err != nil {
		return nil, err
	}
	for _, n := range names {
		if !strings.HasPrefix(n, ":") {
			continue
		}
		var p uint32
		if err := conn.BusObject().Call("org.freedesktop.DBus.GetConnectionUnixProcessID", 0, n).Store(&p); err != nil || p != pid {
			continue
		}
		item := conn.Object(n, ayatanaItemPath)
		v, err := item.GetProperty("org.kde.StatusNotifierItem.Menu")
		if err != nil {
			continue
		}
		path, ok := v.Value().(dbus.ObjectPath)
		if !ok {
			return nil, fmt.Errorf("Menu property is %T", v.Value())
		}
		return &dbusMenu{item: item, menu: conn.Object(n, path)}, nil
	}
	return nil, errors.New("no StatusNotifierItem from the process yet")
}

// layout reads the whole menu.
func (m *dbusMenu) layout() (menuNode, error) {
	var rev uint32
	var raw struct {
		ID       int32
		Props    map[string]dbus.Variant
		Children []dbus.Variant
	}
	if err := m.menu.Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{}).Store(&rev, &raw); err != nil {
		return menuNode{}, err
	}
	return toNode(raw.ID, raw.Props, raw.Children)
}

func toNode(id int32, props map[string]dbus.Variant, children []dbus.Variant) (menuNode, error) {
	n := menuNode{ID: id, Props: props}
	for _, c := range children {
		parts, ok := c.Value().([]any)
		if !ok || len(parts) != 3 {
			return n, fmt.Errorf("layout child %v is not (ia{sv}av)", c)
		}
		cid, _ := parts[0].(int32)
		cprops, _ := parts[1].(map[string]dbus.Variant)
		cchildren, _ := parts[2].([]dbus.Variant)
		child, err := toNode(cid, cprops, cchildren)
		if err != nil {
			return n, err
		}
		n.Children = append(n.Children, child)
	}
	return n, nil
}

// find returns the first row under n whose label starts with prefix.
func (n menuNode) find(prefix string) (menuNode, bool) {
	for _, c := range n.Children {
		if strings.HasPrefix(c.label(), prefix) {
			return c, true
		}
		if d, ok := c.find(prefix); ok {
			return d, true
		}
	}
	return menuNode{}, false
}

func (n menuNode) String() string {
	var b strings.Builder
	var walk func(menuNode, string)
	walk = func(n menuNode, indent string) {
		for _, c := range n.Children {
			fmt.Fprintf(&b, "%s%d %q enabled=%v toggle=%d\n", indent, c.ID, c.label(), c.enabled(), c.toggled())
			walk(c, indent+"  ")
		}
	}
	walk(n, "")
	return b.String()
}

// waitRow waits until a row whose label starts with prefix is in state
// ("": any; "checked" or "unchecked": its check mark; "enabled") and
// returns its id.
func (m *dbusMenu) waitRow(t *testing.T, prefix, state string) int32 {
	t.Helper()
	var last menuNode
	deadline := time.Now().Add(time.Minute)
	for {
		root, err := m.layout()
		if err == nil {
			last = root
			if n, ok := root.find(prefix); ok {
				switch {
				case state == "checked" && n.toggled() == 1,
					state == "unchecked" && n.toggled() == 0,
					state == "enabled" && n.enabled(),
					state == "":
					return n.ID
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s row %q in the menu after a minute (last error %v):\n%s", state, prefix, err, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// click sends the event a panel sends when the user chooses a row.
func (m *dbusMenu) click(t *testing.T, id int32) {
	t.Helper()
	call := m.menu.Call("com.canonical.dbusmenu.Event", 0, id, "clicked", dbus.MakeVariant(""), uint32(time.Now().Unix()))
	if call.Err != nil {
		t.Fatalf("click %d: %v", id, call.Err)
	}
}
