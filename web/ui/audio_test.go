package ui

import (
	"path/filepath"
	"testing"

	"hearth/internal/testmodels"
)

// TestBrowserAudio serves the tiny Gemma 4 with its audio tower through
// hearth serve: a dropped WAV and a clip recorded from Chromium's fake
// microphone (sent as WebM or MP4, decoded by the server) are each taken
// without a warning and answered (200), the player shown in the
// transcript.
func TestBrowserAudio(t *testing.T) {
	browserNeeds(t)
	if testing.Short() {
		t.Skip("skipping the browser tests in -short mode")
	}
	srv := startHearthWith(t, filepath.Join(testmodels.Root(), "gemma4_audio-f32"), t.TempDir())
	image, audio := writeFixtures(t, t.TempDir())
	for _, scenario := range []string{"hear", "record"} {
		t.Run(scenario, func(t *testing.T) {
			res := runDriver(t, scenario, srv.base(), driverEnv{out: t.TempDir(), image: image, audio: audio, models: srv.models})
			if res["status"] != float64(200) {
				t.Errorf("%s: %v", scenario, res)
			}
			if scenario == "hear" && res["reply"] == "" {
				t.Errorf("no reply: %v", res)
			}
		})
	}
}
