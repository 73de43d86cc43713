package ui

import "testing"

// TestBrowserReconnect stops the server in the middle of a conversation
// and starts it again on the same port: the page must say that Hearth is
// not running (not "Failed to fetch"), stop showing a model as loaded, and
// pick the server up again by itself.
func TestBrowserReconnect(t *testing.T) {
	browserNeeds(t)
	if testing.Short() {
		t.Skip("skipping the browser tests in -short mode")
	}
	srv := startHearth(t, t.TempDir())
	ctl := control(t, map[string]func() error{
		"stop": func() error {
			srv.stop()
			return nil
		},
		"start": func() error {
			return srv.launch(srv.port())
		},
	})
	// The page talks to the server itself (no proxy), so that a stopped
	// server is a refused connection, as a user would meet it.
	runDriver(t, "reconnect", srv.base()+"/", driverEnv{out: t.ArtifactDir(), models: srv.models, control: ctl})
}
