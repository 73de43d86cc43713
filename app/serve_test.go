package main

import (
	"strings"
	"testing"
	"time"

	"hearth/web"
)

func TestEngineFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		env  mapEnv
		args []string
		want string
	}{
		{"bad env max models", mapEnv{"HEARTH_MAX_MODELS": "0"}, nil, `HEARTH_MAX_MODELS="0"`},
		{"bad flag max models", nil, []string{"--max-models", "0"}, "--max-models 0"},
		{"bad env keep-alive", mapEnv{"HEARTH_KEEP_ALIVE": "soon"}, nil, `--keep-alive: keep_alive "soon"`},
		{"bad flag keep-alive", nil, []string{"--keep-alive", "5 minutes"}, `--keep-alive: keep_alive "5 minutes"`},
		{"bad env drain", mapEnv{"HEARTH_DRAIN": "soon"}, nil, `HEARTH_DRAIN="soon"`},
		{"bad flag drain", nil, []string{"--drain", "0s"}, "--drain 0s: must be positive"},
		{"bad env body timeout", mapEnv{"HEARTH_BODY_TIMEOUT": "-1s"}, nil, `HEARTH_BODY_TIMEOUT="-1s"`},
		{"bad flag body timeout", nil, []string{"--body-timeout", "-1s"}, "--body-timeout -1s: must be positive"},
		{"bad env media URLs", mapEnv{"HEARTH_ALLOW_MEDIA_URLS": "sometimes"}, nil, `HEARTH_ALLOW_MEDIA_URLS="sometimes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := mapEnv{"HEARTH_PORT": "0"}
			for k, v := range tt.env {
				env[k] = v
			}
			c, _, _ := newCLI(t, "", env)
			err := c.run(append([]string{"serve", "--quiet"}, tt.args...))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("serve %q = %v, want an error containing %q", tt.args, err, tt.want)
			}
		})
	}
}

// TestServerTimes checks that --drain and --body-timeout (and their
// variables) reach the web server's Options.
func TestServerTimes(t *testing.T) {
	tests := []struct {
		name               string
		env                mapEnv
		args               []string
		drain, bodyTimeout time.Duration
	}{
		{"defaults", nil, nil, web.DefaultDrain, web.DefaultBodyTimeout},
		{"env", mapEnv{"HEARTH_DRAIN": "3s", "HEARTH_BODY_TIMEOUT": "2m"}, nil, 3 * time.Second, 2 * time.Minute},
		{"flags over env", mapEnv{"HEARTH_DRAIN": "3s"}, []string{"--drain", "250ms", "--body-timeout", "5s"}, 250 * time.Millisecond, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, _ := newCLI(t, "", tt.env)
			fs := c.flags("serve", "serve")
			f, err := c.engineFlags(fs)
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			opt := c.serverOptions(f, nil, nil)
			if opt.Drain != tt.drain || opt.BodyTimeout != tt.bodyTimeout {
				t.Errorf("Drain, BodyTimeout = %v, %v, want %v, %v", opt.Drain, opt.BodyTimeout, tt.drain, tt.bodyTimeout)
			}
		})
	}
}

// TestMediaURLFlag checks that URL fetching for image and video parts is
// off unless --allow-media-urls (or its variable) turns it on.
func TestMediaURLFlag(t *testing.T) {
	tests := []struct {
		name string
		env  mapEnv
		args []string
		want bool
	}{
		{"off by default", nil, nil, false},
		{"flag", nil, []string{"--allow-media-urls"}, true},
		{"env", mapEnv{"HEARTH_ALLOW_MEDIA_URLS": "1"}, nil, true},
		{"flag over env", mapEnv{"HEARTH_ALLOW_MEDIA_URLS": "true"}, []string{"--allow-media-urls=false"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, _ := newCLI(t, "", tt.env)
			fs := c.flags("serve", "serve")
			f, err := c.engineFlags(fs)
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if got := c.serverOptions(f, nil, nil).Media.FetchURLs; got != tt.want {
				t.Errorf("Media.FetchURLs = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestUntil(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		expires time.Time
		active  int
		want    string
	}{
		{time.Time{}, 0, "forever"},
		{time.Time{}, 2, "forever"},
		{now.Add(5 * time.Minute), 1, "in use"},
		{now.Add(4*time.Minute + 400*time.Millisecond), 0, "in 4m0s"},
		{now.Add(-time.Second), 0, "unloading"},
	}
	for _, tt := range tests {
		if got := until(now, tt.expires, tt.active); got != tt.want {
			t.Errorf("until(%v, %d) = %q, want %q", tt.expires, tt.active, got, tt.want)
		}
	}
}
