package main

import (
	"slices"
	"testing"
)

func TestDefaultCommand(t *testing.T) {
	tests := []struct {
		exe      string
		inBundle bool
	}{
		{"/Applications/Hearth.app/Contents/MacOS/hearth", true},
		{"/Users/me/Downloads/Hearth 2.app/Contents/MacOS/hearth", true},
		{"/usr/local/bin/hearth", false},
		{"/Applications/Hearth.app/Contents/Resources/hearth", false},
		{"/opt/MacOS/hearth", false},
		{"/tmp/Contents/MacOS/hearth", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := inAppBundle(tt.exe); got != tt.inBundle {
			t.Errorf("inAppBundle(%q) = %v, want %v", tt.exe, got, tt.inBundle)
		}
		want := "serve"
		if tt.inBundle && trayAvailable {
			want = "menu"
		}
		if got := defaultCommand(tt.exe); got != want {
			t.Errorf("defaultCommand(%q) = %q, want %q (tray in this build: %v)", tt.exe, got, want, trayAvailable)
		}
	}
	// The test binary is no bundle: hearth with no command serves.
	if got := defaultCommand(executable()); got != "serve" {
		t.Errorf("defaultCommand(%q) = %q", executable(), got)
	}
}

func TestDropFinderArgs(t *testing.T) {
	tests := []struct{ in, want []string }{
		{nil, nil},
		{[]string{"-psn_0_12345"}, nil},
		{[]string{"menu", "-psn_0_1", "--port", "0"}, []string{"menu", "--port", "0"}},
		{[]string{"serve", "--model", "x"}, []string{"serve", "--model", "x"}},
	}
	for _, tt := range tests {
		if got := dropFinderArgs(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("dropFinderArgs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestMenuWithoutTray checks what hearth menu says in a build without the
// tray (the default Linux build), before it starts anything.
func TestMenuWithoutTray(t *testing.T) {
	if trayAvailable {
		t.Skip("this build has the tray; TestTray runs it")
	}
	c, _, _ := newCLI(t, "", mapEnv{"HEARTH_PORT": "0"})
	if err := c.run([]string{"menu"}); err != errNoTray {
		t.Errorf("menu without a tray: %v, want %v", err, errNoTray)
	}
}
