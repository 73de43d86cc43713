// The desktop on macOS, through AppKit (darwinkit): NSWorkspace opens
// URLs, NSPasteboard copies, NSUserNotificationCenter notifies, and an
// NSAlert with a text field asks. darwinkit needs cgo.

//go:build cgo

package main

import (
	"errors"
	"os/exec"
	"strconv"

	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/macos/appkit"
	"github.com/progrium/darwinkit/macos/foundation"
	"github.com/progrium/darwinkit/objc"
)

// systemDesktop is this session's desktop.
type systemDesktop struct{ env getenv }

// onMain runs f on the main thread, where AppKit's UI calls belong, and
// waits for it. Callers are click handlers, never the main thread itself.
func onMain(f func()) {
	dispatch.MainQueue().DispatchSync(func() { objc.WithAutoreleasePool(f) })
}

// OpenURL asks NSWorkspace to open url in the default browser.
func (systemDesktop) OpenURL(url string) error {
	ok := false
	onMain(func() {
		u := foundation.URL_URLWithString(url)
		ok = !u.IsNil() && appkit.Workspace_SharedWorkspace().OpenURL(u)
	})
	if !ok {
		return errors.New("NSWorkspace could not open " + url)
	}
	return nil
}

// Copy puts text on the general pasteboard.
func (systemDesktop) Copy(text string) error {
	ok := false
	onMain(func() {
		pb := appkit.Pasteboard_GeneralPasteboard()
		pb.ClearContents()
		ok = pb.SetStringForType(text, appkit.PasteboardTypeString)
	})
	if !ok {
		return errors.New("the pasteboard refused the text")
	}
	return nil
}

// Notify delivers an NSUserNotification (darwinkit binds no deprecated
// API, so it is sent by selector). Outside an app bundle there is no
// notification center: osascript's display notification stands in.
func (systemDesktop) Notify(title, body string) error {
	delivered := false
	onMain(func() {
		center := objc.Call[objc.Object](objc.GetClass("NSUserNotificationCenter"), objc.Sel("defaultUserNotificationCenter"))
		if center.IsNil() {
			return
		}
		n := objc.Call[objc.Object](objc.GetClass("NSUserNotification"), objc.Sel("new"))
		n.Autorelease()
		objc.Call[objc.Void](n, objc.Sel("setTitle:"), title)
		objc.Call[objc.Void](n, objc.Sel("setInformativeText:"), body)
		objc.Call[objc.Void](center, objc.Sel("deliverNotification:"), n)
		delivered = true
	})
	if delivered {
		return nil
	}
	script := "display notification " + strconv.Quote(body) + " with title " + strconv.Quote(title)
	return exec.Command("osascript", "-e", script).Run()
}

// Ask runs a modal NSAlert with a text field, in front of other apps (a
// menu-bar app is never frontmost on its own).
func (systemDesktop) Ask(title, prompt string) (answer string, ok bool, err error) {
	onMain(func() {
		app := appkit.Application_SharedApplication()
		objc.Call[objc.Void](app, objc.Sel("activateIgnoringOtherApps:"), true)
		alert := appkit.NewAlert()
		alert.SetMessageText(title)
		alert.SetInformativeText(prompt)
		alert.AddButtonWithTitle("Pull")
		alert.AddButtonWithTitle("Cancel")
		field := appkit.NewTextFieldWithFrame(foundation.Rect{Size: foundation.Size{Width: 320, Height: 24}})
		field.SetPlaceholderString("mlx-community/Qwen3-1.7B-4bit")
		alert.SetAccessoryView(field)
		alert.Window().SetInitialFirstResponder(field)
		if alert.RunModal() == appkit.AlertFirstButtonReturn {
			answer, ok = field.StringValue(), true
		}
	})
	return answer, ok, nil
}
