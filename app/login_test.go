package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLoginItem toggles launch at login through the menu with a temporary
// HOME, as a user would: the file appears, the checkbox follows it, and it
// goes away again.
func TestLoginItem(t *testing.T) {
	for _, xdg := range []bool{false, true} {
		home := t.TempDir()
		env := mapEnv{"HOME": home}
		want := filepath.Join(home, ".config", "autostart", "hearth.desktop")
		if xdg {
			env["XDG_CONFIG_HOME"] = filepath.Join(home, "xdg")
			want = filepath.Join(home, "xdg", "autostart", "hearth.desktop")
		}
		if runtime.GOOS == "darwin" {
			want = filepath.Join(home, "Library", "LaunchAgents", bundleID+".plist")
		}
		li, err := newLoginItem(env, "/opt/Hearth Test/hearth")
		if runtime.GOOS != "darwin" && runtime.GOOS != "linux" {
			if err == nil {
				t.Fatal("newLoginItem: no error on a system without launch at login")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if li.Path != want {
			t.Errorf("login item at %s, want %s", li.Path, want)
		}
		m, _ := newTestMenu(t, func(d *menuDeps) { d.Login = li })
		for i, on := range []bool{true, false, true, false} {
			if err := m.Activate(rowLogin); err != nil {
				t.Fatalf("toggle %d: %v", i, err)
			}
			raw, err := os.ReadFile(want)
			if on != (err == nil) {
				t.Fatalf("toggle %d: file present = %v, want %v", i, err == nil, on)
			}
			if on && string(raw) != string(li.Content) {
				t.Errorf("toggle %d wrote %q, want %q", i, raw, li.Content)
			}
			if got := m.State().Login; got != on {
				t.Errorf("toggle %d: menu says launch at login = %v, want %v", i, got, on)
			}
			if row := findRow(m.View().Items, rowLogin); row.Checked != on || row.Disabled {
				t.Errorf("toggle %d: row %+v, want checked = %v", i, row, on)
			}
		}
		leftovers, _ := os.ReadDir(filepath.Dir(want))
		if len(leftovers) != 0 {
			t.Errorf("left behind in %s: %v", filepath.Dir(want), leftovers)
		}
	}
}

// TestLaunchAgent checks the macOS login item is a valid plist that runs
// the bundle's executable's menu at login and is not kept alive after
// Quit.
func TestLaunchAgent(t *testing.T) {
	exe := "/Applications/Hearth & Co <test>.app/Contents/MacOS/hearth"
	li := launchAgent("/Users/me", exe, []string{"menu"})
	if li.Path != "/Users/me/Library/LaunchAgents/app.hearth.Hearth.plist" {
		t.Errorf("path %s", li.Path)
	}
	v, err := parsePlist(li.Content)
	if err != nil {
		t.Fatalf("%v\n%s", err, li.Content)
	}
	m := v.(map[string]any)
	args, _ := m["ProgramArguments"].([]any)
	if len(args) != 2 || args[0] != exe || args[1] != "menu" {
		t.Errorf("ProgramArguments = %#v, want [%q menu]", m["ProgramArguments"], exe)
	}
	for k, w := range map[string]any{
		"Label":                  bundleID,
		"RunAtLoad":              true,
		"LimitLoadToSessionType": "Aqua",
		"StandardErrorPath":      "/Users/me/Library/Logs/Hearth/hearth.log",
	} {
		if m[k] != w {
			t.Errorf("%s = %#v, want %#v", k, m[k], w)
		}
	}
	if _, ok := m["KeepAlive"]; ok {
		t.Error("KeepAlive set: launchd would restart Hearth after Quit")
	}
}

// TestDesktopEntryExec checks that the autostart entry's Exec line gives
// back the executable and its arguments, whatever the path holds.
func TestDesktopEntryExec(t *testing.T) {
	tests := []struct {
		exe      string
		quoted   bool
		wantExec string
	}{
		{"/usr/bin/hearth", false, `/usr/bin/hearth menu`},
		{"/opt/My Apps/hearth", true, `"/opt/My Apps/hearth" menu`},
		{`/opt/we"ird$dir/hearth`, true, `"/opt/we\\"ird\\$dir/hearth" menu`},
		{`/opt/back\slash/hearth`, true, `"/opt/back\\\\slash/hearth" menu`},
		{"/opt/100%/hearth", false, `/opt/100%%/hearth menu`},
	}
	for _, tt := range tests {
		li := xdgAutostart("/home/me/.config", tt.exe, []string{"menu"})
		var exec string
		for _, line := range strings.Split(string(li.Content), "\n") {
			if v, ok := strings.CutPrefix(line, "Exec="); ok {
				exec = v
			}
		}
		if exec != tt.wantExec {
			t.Errorf("%s: Exec=%s, want %s", tt.exe, exec, tt.wantExec)
		}
		if got := parseExec(t, exec); len(got) != 2 || got[0] != tt.exe || got[1] != "menu" {
			t.Errorf("%s: Exec=%s reads back as %q", tt.exe, exec, got)
		}
		if !strings.HasPrefix(string(li.Content), "[Desktop Entry]\nType=Application\n") || li.Path != "/home/me/.config/autostart/hearth.desktop" {
			t.Errorf("%s: entry at %s:\n%s", tt.exe, li.Path, li.Content)
		}
	}
}

// parseExec reads an Exec value as the desktop entry specification says:
// string escapes first, then quoted arguments, then %% as %.
func parseExec(t *testing.T, v string) []string {
	t.Helper()
	v = strings.NewReplacer(`\\`, `\`, `\n`, "\n", `\t`, "\t", `\r`, "\r", `\s`, " ").Replace(v)
	var args []string
	var cur strings.Builder
	inQuote, have := false, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case inQuote && c == '\\' && i+1 < len(v) && strings.IndexByte("\"`$\\", v[i+1]) >= 0:
			i++
			cur.WriteByte(v[i])
		case c == '"':
			inQuote, have = !inQuote, true
		case c == ' ' && !inQuote:
			if have {
				args = append(args, strings.ReplaceAll(cur.String(), "%%", "%"))
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	if inQuote {
		t.Fatalf("unbalanced quotes in %q", v)
	}
	if have {
		args = append(args, strings.ReplaceAll(cur.String(), "%%", "%"))
	}
	return args
}

func TestCheckLoginExe(t *testing.T) {
	tests := []struct {
		exe string
		ok  bool
	}{
		{"/Applications/Hearth.app/Contents/MacOS/hearth", true},
		{"/home/me/bin/hearth", true},
		{"/private/var/folders/x/T/AppTranslocation/1234/d/Hearth.app/Contents/MacOS/hearth", false},
		{"", false},
	}
	for _, tt := range tests {
		if err := checkLoginExe(tt.exe); (err == nil) != tt.ok {
			t.Errorf("checkLoginExe(%q) = %v, want ok = %v", tt.exe, err, tt.ok)
		}
		if _, err := newLoginItem(mapEnv{"HOME": t.TempDir()}, tt.exe); !tt.ok && err == nil {
			t.Errorf("newLoginItem(%q) accepted it", tt.exe)
		}
	}
}
