package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"hearth/assets"
	"hearth/internal/testenv"
)

// trayPackages are what TestTray needs from the system; .ci/packages-tray.txt
// installs them.
const trayPackages = "xvfb-run, dbus-run-session and the tray's build packages (.ci/packages-tray.txt: xvfb xauth dbus pkgconf libayatana-appindicator3-dev libgtk-3-dev)"

// TestTray builds the tray variant (go build -tags tray), starts hearth
// menu under Xvfb in a private D-Bus session, and drives its menu the way
// a desktop panel does: libayatana-appindicator exports the menu on the
// session bus as com.canonical.dbusmenu, so the test reads the rows with
// GetLayout and clicks them with Event. It checks each click's effect on
// the outside world: the autostart file, the browser and clipboard tools,
// the model the server reports in /api/ps, a pull from a stand-in hub and
// its notification, and the process exiting on Quit.
//
// Run plainly, it re-executes itself under xvfb-run -a dbus-run-session.
func TestTray(t *testing.T) {
	if os.Getenv("HEARTH_TRAY_SESSION") == "" {
		_, errX := exec.LookPath("xvfb-run")
		_, errD := exec.LookPath("dbus-run-session")
		errP := exec.Command("pkg-config", "--exists", "ayatana-appindicator3-0.1", "gtk+-3.0").Run()
		testenv.Need(t, trayPackages, errX == nil && errD == nil && errP == nil)
		cmd := exec.Command("xvfb-run", "-a", "dbus-run-session", "--", os.Args[0], "-test.run", "^TestTray$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "HEARTH_TRAY_SESSION=1")
		out, err := cmd.CombinedOutput()
		t.Logf("under xvfb-run dbus-run-session:\n%s", out)
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestTray")) {
			t.Fatalf("TestTray in the session: %v", err)
		}
		return
	}
	tmp := t.TempDir()
	exe := filepath.Join(tmp, "hearth")
	build := exec.Command("go", "build", "-tags", "tray", "-o", exe, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags tray: %v\n%s", err, out)
	}

	// A home, a cache with one model, a hub with another, and stand-ins
	// for the desktop's tools that log how they were called.
	env := trayEnv(t, tmp)
	cacheRepo(t, filepath.Join(tmp, "hf", "hub"), "acme/tiny-chat", chatTinyDir)
	hub := newTestHub(t, "acme/pulled", chatTinyDir)
	env = append(env, "HF_ENDPOINT="+hub.URL)
	toolLog := filepath.Join(tmp, "tools.log")
	fakeTools(t, filepath.Join(tmp, "bin"), toolLog)

	cmd := exec.Command(exe, "menu", "--threads", "1")
	cmd.Env = env
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("hearth menu stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
	}()

	url := waitFor(t, "the listening banner", func() (string, bool) {
		m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(stdout.String())
		if m == nil {
			return "", false
		}
		return m[1], true
	})
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	menu := waitFor(t, "the indicator on the session bus", func() (*dbusMenu, bool) {
		m, err := findIndicator(conn, uint32(cmd.Process.Pid))
		return m, err == nil
	})

	status := "Engine at " + strings.TrimPrefix(url, "http://") + " · cpu"
	menu.waitRow(t, status, "")
	menu.waitRow(t, "Model: hearth/starter (generic tier)", "")
	menu.waitRow(t, "hearth/starter — generic · ", "checked")
	menu.waitRow(t, "acme/tiny-chat — generic · ", "unchecked")
	menu.waitRow(t, "Launch at Login", "unchecked")

	// The idle icon is the panel icon from assets.
	iconPath := waitFor(t, "the icon", func() (string, bool) {
		v, err := menu.item.GetProperty("org.kde.StatusNotifierItem.IconName")
		s, _ := v.Value().(string)
		return s, err == nil && s != ""
	})
	_, idle := assets.MenuIcon(false)
	if raw, err := os.ReadFile(iconPath); err != nil || !bytes.Equal(raw, idle) {
		t.Errorf("icon %s is not assets' idle panel icon (%v)", iconPath, err)
	}

	// GTK ticks a check item as soon as it is clicked; the file is the
	// action's real outcome, and the model redraws the tick from it.
	autostart := filepath.Join(tmp, "config", "autostart", "hearth.desktop")
	menu.click(t, menu.waitRow(t, "Launch at Login", "enabled"))
	entry := waitFor(t, "the autostart entry", func() (string, bool) {
		raw, err := os.ReadFile(autostart)
		return string(raw), err == nil
	})
	if !strings.Contains(entry, "Exec="+exe+" menu\n") {
		t.Errorf("autostart entry:\n%s", entry)
	}
	menu.waitRow(t, "Launch at Login", "checked")
	menu.click(t, menu.waitRow(t, "Launch at Login", "enabled"))
	waitFor(t, "the autostart entry to go", func() (struct{}, bool) {
		_, err := os.Stat(autostart)
		return struct{}{}, os.IsNotExist(err)
	})
	menu.waitRow(t, "Launch at Login", "unchecked")

	menu.click(t, menu.waitRow(t, "Open Chat", "enabled"))
	waitTool(t, toolLog, "xdg-open "+url+"/")
	menu.click(t, menu.waitRow(t, "Copy API URL", "enabled"))
	waitTool(t, toolLog, "xclip -selection clipboard <<"+url+"/v1")

	menu.click(t, menu.waitRow(t, "acme/tiny-chat — ", "enabled"))
	menu.waitRow(t, "Model: acme/tiny-chat (generic tier)", "")
	menu.waitRow(t, "acme/tiny-chat — generic · ", "checked")
	if got := loadedID(t, url); got != "acme/tiny-chat" {
		t.Errorf("/api/ps reports %q after choosing acme/tiny-chat", got)
	}

	menu.click(t, menu.waitRow(t, "Pull a Model…", "enabled"))
	waitTool(t, toolLog, "notify-send --app-name=Hearth Pulled acme/pulled")
	menu.waitRow(t, "acme/pulled — generic · ", "unchecked")

	menu.click(t, menu.waitRow(t, "Quit Hearth", "enabled"))
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("hearth menu exited with %v after Quit", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("hearth menu did not exit after Quit")
	}
}

// trayEnv is a fresh user for the tray: home, config, caches and runtime
// directory under tmp, the stand-in tools first on $PATH.
func trayEnv(t *testing.T, tmp string) []string {
	t.Helper()
	for _, d := range []string{"home", "config", "cache", "run", "hf", "bin"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "HEARTH_") && !strings.HasPrefix(k, "HF_") && !strings.HasPrefix(k, "XDG_") && k != "HOME" && k != "PATH" {
			env = append(env, kv)
		}
	}
	return append(env,
		"HOME="+filepath.Join(tmp, "home"),
		"XDG_CONFIG_HOME="+filepath.Join(tmp, "config"),
		"XDG_CACHE_HOME="+filepath.Join(tmp, "cache"),
		"XDG_RUNTIME_DIR="+filepath.Join(tmp, "run"),
		"HF_HOME="+filepath.Join(tmp, "hf"),
		"PATH="+filepath.Join(tmp, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HEARTH_PORT=0",
		"HEARTH_BACKEND=cpu",
		"NO_AT_BRIDGE=1",
	)
}

// fakeTools writes stand-ins for the desktop's tools: each logs its name,
// its arguments and what it read (after "<<"), and zenity answers
// acme/pulled.
func fakeTools(t *testing.T, dir, log string) {
	t.Helper()
	tools := map[string]string{
		"xdg-open":    `echo "xdg-open $*" >> "$LOG"`,
		"xclip":       `echo "xclip $* <<$(cat)" >> "$LOG"`,
		"notify-send": `echo "notify-send $*" >> "$LOG"`,
		"zenity":      `echo "zenity $*" >> "$LOG"; echo acme/pulled`,
	}
	for name, body := range tools {
		script := fmt.Sprintf("#!/bin/sh\nLOG=%q\n%s\n", log, body)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func waitTool(t *testing.T, log, line string) {
	t.Helper()
	waitFor(t, "the tool call "+line, func() (struct{}, bool) {
		raw, _ := os.ReadFile(log)
		return struct{}{}, strings.Contains(string(raw), line)
	})
}

// waitFor polls f until it reports ok, for up to a minute.
func waitFor[T any](t *testing.T, what string, f func() (T, bool)) T {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		v, ok := f()
		if ok {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// loadedID asks the server which model it holds.
func loadedID(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/ps", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ps psReply
	if err := json.NewDecoder(resp.Body).Decode(&ps); err != nil || len(ps.Models) == 0 {
		t.Fatalf("/api/ps: %v %+v", err, ps)
	}
	return ps.Models[0].ID
}
