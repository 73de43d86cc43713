// The desktop on Linux, through the freedesktop tools: xdg-open,
// wl-copy / xclip / xsel, notify-send, and zenity or kdialog for the pull
// dialog.

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// systemDesktop is this session's desktop.
type systemDesktop struct{ env getenv }

// toolTimeout bounds a helper that should return at once; a dialog waits
// for the user instead.
const toolTimeout = 15 * time.Second

func runTool(stdin string, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	// Output stays unread: xclip leaves a child serving the selection, and
	// a pipe it inherits would keep Wait waiting.
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// firstTool returns the first of names on $PATH.
func firstTool(names ...string) (string, bool) {
	for _, n := range names {
		if _, err := exec.LookPath(n); err == nil {
			return n, true
		}
	}
	return "", false
}

// OpenURL runs xdg-open.
func (d systemDesktop) OpenURL(url string) error { return runTool("", "xdg-open", url) }

// Copy pipes text to wl-copy on Wayland, else xclip or xsel.
func (d systemDesktop) Copy(text string) error {
	if d.env.Getenv("WAYLAND_DISPLAY") != "" {
		if _, ok := firstTool("wl-copy"); ok {
			return runTool(text, "wl-copy")
		}
	}
	switch tool, _ := firstTool("xclip", "xsel"); tool {
	case "xclip":
		return runTool(text, "xclip", "-selection", "clipboard")
	case "xsel":
		return runTool(text, "xsel", "--clipboard", "--input")
	}
	return errors.New("no clipboard tool (install wl-clipboard, xclip or xsel)")
}

// Notify runs notify-send.
func (d systemDesktop) Notify(title, body string) error {
	if _, ok := firstTool("notify-send"); !ok {
		return errors.New("notify-send is not installed (libnotify-bin)")
	}
	return runTool("", "notify-send", "--app-name=Hearth", title, body)
}

// Ask shows zenity's or kdialog's text entry. Both exit 1 on Cancel.
func (d systemDesktop) Ask(title, prompt string) (string, bool, error) {
	var cmd *exec.Cmd
	switch tool, _ := firstTool("zenity", "kdialog"); tool {
	case "zenity":
		cmd = exec.Command("zenity", "--entry", "--title="+title, "--text="+prompt)
	case "kdialog":
		cmd = exec.Command("kdialog", "--title", title, "--inputbox", prompt)
	default:
		return "", false, errors.New("no dialog tool (install zenity or kdialog), or run hearth pull in a terminal")
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", cmd.Args[0], err)
	}
	return strings.TrimSpace(string(out)), true, nil
}
