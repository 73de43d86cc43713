package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// shared calls a function each platform file defines.
const shared = `package planted

func Shared() int { return platform() }
`

// cleanDarwin uses cgo the way darwin code does: C names are not checked,
// the Go around them is.
const cleanDarwin = `package planted

/*
#include <stdlib.h>
*/
import "C"

import "unsafe"

func platform() int {
	p := C.malloc(C.size_t(8))
	defer C.free(unsafe.Pointer(p))
	var n C.int = C.some_function(p)
	return int(n)
}
`

const cleanLinux = `package planted

func platform() int { return 1 }
`

// writeModule writes files into a fresh module and returns its directory.
func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/planted\n\ngo 1.26\n"
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPlantedErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		// want is "file: message part" for each finding, in order; none
		// means the check passes.
		want []string
		// darwinOnly is whether the first finding is in a darwin-only file.
		darwinOnly bool
	}{
		{
			name:  "clean tree passes, C names and all",
			files: map[string]string{"a.go": shared, "a_darwin.go": cleanDarwin, "a_linux.go": cleanLinux},
		},
		{
			name: "type error in a _darwin.go file",
			files: map[string]string{"a.go": shared, "a_linux.go": cleanLinux,
				"a_darwin.go": strings.Replace(cleanDarwin, "return int(n)", `_ = n; return "one"`, 1)},
			want:       []string{`a_darwin.go: cannot use "one"`},
			darwinOnly: true,
		},
		{
			name: "darwin file lacks what the shared file calls",
			files: map[string]string{"a.go": shared, "a_linux.go": cleanLinux,
				"a_darwin.go": strings.Replace(cleanDarwin, "func platform()", "func platfrom()", 1)},
			want: []string{"a.go: undefined: platform"},
		},
		{
			name: "wrong method on a Go value in cgo code",
			files: map[string]string{"a.go": shared, "a_linux.go": cleanLinux,
				"a_darwin.go": strings.Replace(cleanDarwin, "return int(n)", "var s []int; s.Len(); return int(n)", 1)},
			want:       []string{"a_darwin.go: s.Len undefined"},
			darwinOnly: true,
		},
		{
			name: "darwin build tag instead of a suffix",
			files: map[string]string{"a.go": shared, "a_darwin.go": cleanDarwin, "a_linux.go": cleanLinux,
				"tagged.go": "//go:build darwin\n\npackage planted\n\nvar x int = \"tagged\"\n"},
			want:       []string{`tagged.go: cannot use "tagged"`},
			darwinOnly: true,
		},
		{
			name: "package only darwin builds",
			files: map[string]string{"a.go": shared, "a_darwin.go": cleanDarwin, "a_linux.go": cleanLinux,
				"mac/mac_darwin.go": "package mac\n\nfunc F() string { return undefinedThing }\n"},
			want:       []string{"mac/mac_darwin.go: undefined: undefinedThing"},
			darwinOnly: true,
		},
		{
			name: "a Linux-only error is the Linux build's to catch",
			files: map[string]string{"a.go": shared, "a_darwin.go": cleanDarwin,
				"a_linux.go": strings.Replace(cleanLinux, "return 1", `return "linux"`, 1)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeModule(t, tt.files)
			res, err := Check(Options{Dir: dir, Arch: "arm64", Patterns: []string{"./..."}, Env: []string{"GOWORK=off", "GOFLAGS="}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range res.Errors {
				got = append(got, f.String())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("findings %q, want %d matching %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				file, msg, _ := strings.Cut(w, ": ")
				f := res.Errors[i]
				if filepath.ToSlash(f.Pos.Filename) != file || !strings.Contains(f.Msg, msg) || f.Pos.Line == 0 {
					t.Errorf("finding %q, want %s with %q", f, file, msg)
				}
			}
			if len(tt.want) > 0 && res.Errors[0].DarwinOnly != tt.darwinOnly {
				t.Errorf("finding %q: darwin-only = %v, want %v", res.Errors[0], res.Errors[0].DarwinOnly, tt.darwinOnly)
			}
			if len(res.Checked) == 0 || res.Checked[0].ImportPath != "example.com/planted" {
				t.Errorf("checked %+v, want example.com/planted first", res.Checked)
			}
		})
	}
}

// TestTree checks Hearth's own darwin code on both Mac architectures, and
// that the check covers it: the tray, the AppKit desktop, the LaunchAgent,
// the Metal working set, and media's ImageIO (HEIC) and AVFoundation
// (video) decoders.
func TestTree(t *testing.T) {
	for _, arch := range []string{"arm64", "amd64"} {
		res, err := Check(Options{Dir: filepath.Join("..", ".."), Arch: arch, Patterns: []string{"./..."}})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range res.Errors {
			t.Errorf("%s", f)
		}
		covered := map[string][]string{}
		for _, c := range res.Checked {
			covered[c.ImportPath] = c.DarwinOnly
		}
		for pkg, files := range map[string][]string{
			"hearth/app":        {"desktop_darwin.go", "login_darwin.go", "tray.go"},
			"hearth/engine/fit": {"memory_darwin.go"},
			"hearth/media":      {"heic_darwin.go", "video_darwin.go"},
		} {
			for _, f := range files {
				if !slices.Contains(covered[pkg], f) {
					t.Errorf("darwin/%s: %s %s was not checked (checked: %v)", arch, pkg, f, covered)
				}
			}
		}
		if res.Deps < 100 {
			t.Errorf("darwin/%s: only %d dependencies type-checked", arch, res.Deps)
		}
	}
}
