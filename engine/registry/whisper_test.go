package registry

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hearth/engine/weights"
	"hearth/engine/whisper/whispertest"
)

// TestClassifyWhisper: a Whisper checkpoint is listed as servable with the
// transcription capability, from its tensors; one whose weights lack the
// decoder is unsupported with the reason.
func TestClassifyWhisper(t *testing.T) {
	dir := t.TempDir()
	if err := whispertest.Write(dir, 1, false); err != nil {
		t.Fatal(err)
	}
	rec := classify(dir, "local/whisper", "", nil, nil)
	if !rec.Servable() || rec.Tier != TierTargeted || !slices.Equal(rec.Capabilities, []string{CapTranscription}) ||
		rec.Family != "whisper" || rec.Params == 0 || rec.Quantization != "f32" {
		t.Fatalf("record %+v (err %v)", rec, rec.Err())
	}
	var encoderOnly = whispertest.Weights(1)[:0]
	for _, w := range whispertest.Weights(1) {
		if !strings.HasPrefix(w.Name, "model.decoder.") {
			encoderOnly = append(encoderOnly, w)
		}
	}
	if err := os.Remove(filepath.Join(dir, "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	if err := weights.Write(filepath.Join(dir, "model.safetensors"), encoderOnly, nil); err != nil {
		t.Fatal(err)
	}
	rec = classify(dir, "local/whisper", "", nil, nil)
	if rec.Servable() || rec.Tier != TierUnsupported || !strings.Contains(rec.Reason, "decoder") {
		t.Fatalf("encoder only: %+v", rec)
	}
}
