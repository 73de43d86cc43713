package ui

import (
	"path/filepath"
	"testing"

	"hearth/internal/testmodels"
)

// TestBrowserVision drops a picture into the chat served by hearth serve
// with the tiny Gemma 3 vision checkpoint: the page takes it without a
// warning, the server answers 200 and the reply shows under the
// picture's thumbnail.
func TestBrowserVision(t *testing.T) {
	browserNeeds(t)
	if testing.Short() {
		t.Skip("skipping the browser tests in -short mode")
	}
	srv := startHearthWith(t, filepath.Join(testmodels.Root(), "gemma3_vision-f32"), t.TempDir())
	fixtures := t.TempDir()
	image, audio := writeFixtures(t, fixtures)
	res := runDriver(t, "vision", srv.base(), driverEnv{out: t.TempDir(), image: image, audio: audio, models: srv.models})
	if res["status"] != float64(200) || res["reply"] == "" {
		t.Errorf("the image prompt: %v", res)
	}
}
