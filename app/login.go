// Launch at login: the file a session reads at login to start Hearth's
// menu. Which file, and what it says, is decided here for every system;
// login_darwin.go and login_linux.go only say where the user's files live.

package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// bundleID is Hearth's bundle identifier (Info.plist's CFBundleIdentifier)
// and its LaunchAgent's label.
const bundleID = "app.hearth.Hearth"

// loginItem is one launch-at-login file: present means on.
type loginItem struct {
	Path    string
	Content []byte
}

// Enabled reports whether the file is there.
func (l loginItem) Enabled() (bool, error) {
	_, err := os.Stat(l.Path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// SetEnabled writes the file (atomically, creating its folder) or removes
// it. It does not start or stop anything now: the file acts at the next
// login.
func (l loginItem) SetEnabled(on bool) error {
	if !on {
		if err := os.Remove(l.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	dir := filepath.Dir(l.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".hearth-login-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(l.Content); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", l.Path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", l.Path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), l.Path)
}

// launchAgent is the macOS login item: a LaunchAgent in
// ~/Library/LaunchAgents that runs exe (the bundle's executable) with
// args when the user logs in to the desktop (RunAtLoad, Aqua sessions
// only), is not restarted after Quit (no KeepAlive), and writes its log
// under ~/Library/Logs/Hearth.
func launchAgent(home, exe string, args []string) loginItem {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
`)
	key := func(k string) { fmt.Fprintf(&b, "\t<key>%s</key>\n", xmlText(k)) }
	str := func(indent, s string) { fmt.Fprintf(&b, "%s<string>%s</string>\n", indent, xmlText(s)) }
	key("Label")
	str("\t", bundleID)
	key("AssociatedBundleIdentifiers")
	str("\t", bundleID)
	key("ProgramArguments")
	b.WriteString("\t<array>\n")
	for _, a := range append([]string{exe}, args...) {
		str("\t\t", a)
	}
	b.WriteString("\t</array>\n")
	key("RunAtLoad")
	b.WriteString("\t<true/>\n")
	key("LimitLoadToSessionType")
	str("\t", "Aqua")
	key("ProcessType")
	str("\t", "Interactive")
	logFile := filepath.Join(home, "Library", "Logs", "Hearth", "hearth.log")
	key("StandardOutPath")
	str("\t", logFile)
	key("StandardErrorPath")
	str("\t", logFile)
	b.WriteString("</dict>\n</plist>\n")
	return loginItem{Path: filepath.Join(home, "Library", "LaunchAgents", bundleID+".plist"), Content: b.Bytes()}
}

func xmlText(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// checkLoginExe refuses an executable a login item cannot point at: a
// copy macOS's App Translocation made for an app opened where it was
// downloaded, which is gone after a restart.
func checkLoginExe(exe string) error {
	switch {
	case exe == "":
		return errors.New("cannot tell where this program is")
	case strings.Contains(exe, "/AppTranslocation/"):
		return errors.New("macOS runs Hearth from a temporary copy: move Hearth.app to Applications first")
	}
	return nil
}

// xdgAutostart is the Linux login item: an XDG autostart entry,
// configHome/autostart/hearth.desktop ($XDG_CONFIG_HOME, else ~/.config),
// running exe with args.
func xdgAutostart(configHome, exe string, args []string) loginItem {
	words := []string{desktopExecQuote(exe)}
	for _, a := range args {
		words = append(words, desktopExecQuote(a))
	}
	content := "[Desktop Entry]\n" +
		"Type=Application\n" +
		"Name=Hearth\n" +
		"Comment=Local LLM engine with a web chat, in the panel\n" +
		"Exec=" + desktopEscape(strings.Join(words, " ")) + "\n" +
		"Terminal=false\n" +
		"X-GNOME-Autostart-enabled=true\n"
	return loginItem{Path: filepath.Join(configHome, "autostart", "hearth.desktop"), Content: []byte(content)}
}

// desktopExecQuote quotes one argument of a desktop entry's Exec key: an
// argument with a reserved character goes in double quotes, inside which
// ", `, $ and \ take a backslash; % is doubled (a field code otherwise).
func desktopExecQuote(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	if s != "" && !strings.ContainsAny(s, " \t\n\"'\\><~|&;$*?#()`") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if strings.ContainsRune("\"`$\\", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// desktopEscape applies the desktop entry format's escapes for string
// values (after the Exec quoting, so a quoted backslash becomes \\\\).
func desktopEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\t", `\t`, "\r", `\r`).Replace(s)
}

// homeDir is $HOME from the command's environment, else the system's.
func homeDir(env getenv) (string, error) {
	if h := env.Getenv("HOME"); h != "" {
		return h, nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("launch at login: no home directory: %w", err)
	}
	return h, nil
}
