package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/engine/checkpoint"
	"hearth/engine/tower/gemma4audio"
)

// TestRunAudio benchmarks the tiny Gemma 4 with an audio tower: the
// engine loads the synthetic checkpoint with its tower (every tower
// tensor read), the report times the 10 s clip's extraction, the tower
// and a prompt holding it, in the table and the JSON, and the tower's
// weights are not counted as read by each decoded token.
func TestRunAudio(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	rep, err := Run(context.Background(), Options{
		Synthetic: testAudioShape, Quant: "q4g64", CacheDir: dir,
		Prompts: []int{4}, Decode: 3, Repeats: 2, BandwidthBytes: 1 << 20,
	}, &out)
	if err != nil {
		t.Fatal(err)
	}
	a := rep.Audio
	if a == nil {
		t.Fatalf("no audio measurement for a model with an audio tower:\n%s", out.String())
	}
	// Gemma4Processor's audio_ms_per_token: one soft token per 40 ms
	tokens := AudioClipSeconds * 1000 / 40
	if a.Tokens != tokens || a.PromptTokens != 2*AudioPromptText+tokens+2 || a.Seconds != AudioClipSeconds || a.Rate != AudioClipRate {
		t.Errorf("%d soft tokens in a %d-token prompt from %v s at %d Hz; want %d in %d from %d s at %d Hz",
			a.Tokens, a.PromptTokens, a.Seconds, a.Rate, tokens, 2*AudioPromptText+tokens+2, AudioClipSeconds, AudioClipRate)
	}
	if a.ExtractMs <= 0 || a.TowerMs <= 0 || a.TTFTMs <= a.ExtractMs+a.TowerMs || a.TowerMsPerSecond != a.TowerMs/AudioClipSeconds {
		t.Errorf("extract %v ms, tower %v ms (%v per s), TTFT %v ms: want TTFT past extraction and tower", a.ExtractMs, a.TowerMs, a.TowerMsPerSecond, a.TTFTMs)
	}
	if len(rep.Samples.AudioExtractMs) != 2 || len(rep.Samples.AudioTowerMs) != 2 || len(rep.Samples.AudioTTFTMs) != 2 {
		t.Errorf("samples %v, %v, %v: want 2 of each", rep.Samples.AudioExtractMs, rep.Samples.AudioTowerMs, rep.Samples.AudioTTFTMs)
	}
	if !strings.Contains(out.String(), "audio      a 10 s 48 kHz clip") || rep.Image != nil {
		t.Errorf("table lacks the audio line (or has an image one):\n%s", out.String())
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Audio map[string]float64 `json:"audio"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Audio["tower_ms_per_audio_s"] != a.TowerMsPerSecond || back.Audio["ttft_ms"] != a.TTFTMs {
		t.Errorf("JSON audio %v (%v), want the report's", back.Audio, err)
	}

	ck, err := checkpoint.Read(filepath.Join(dir, testAudioShape+"-q4g64"))
	if err != nil {
		t.Fatal(err)
	}
	var tower, ple int64
	for _, tn := range ck.Weights.Tensors {
		switch {
		case strings.HasPrefix(tn.Name, "model.audio_tower.") || strings.HasPrefix(tn.Name, "model.embed_audio."):
			tower += tn.Length
		case strings.HasPrefix(tn.Name, "model.language_model.embed_tokens_per_layer."):
			ple += tn.Length // read a row at a time
		}
	}
	if tower == 0 || ple == 0 || rep.WeightBytesPerToken != rep.WeightBytes-tower-ple {
		t.Errorf("per token %d of %d bytes, want all but the tower's %d and the per-layer table's %d", rep.WeightBytesPerToken, rep.WeightBytes, tower, ple)
	}
	m, err := engine.LoadCheckpoint(ck, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.HasAudio() || m.HasVision() {
		t.Errorf("audio %v, vision %v: want the audio tower alone", m.HasAudio(), m.HasVision())
	}
}

// TestAudioShapePublished: the full-size shape's audio_config, as the
// engine's tower reads it, is transformers 5.17's Gemma4AudioConfig
// defaults, the released E2B/E4B tower; its decoder is gemma-4-e4b's.
func TestAudioShapePublished(t *testing.T) {
	s := shapes["gemma-4-e4b-audio"]
	q, _ := lookupQuant("q4g64")
	raw, err := json.Marshal(s.config(q)["audio_config"])
	if err != nil {
		t.Fatal(err)
	}
	got, err := gemma4audio.ParseConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := gemma4audio.ParseConfig(nil)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("audio_config %+v, want transformers' defaults %+v", got, want)
	}
	text, e4b := s.gemma4Text(), shapes["gemma-4-e4b"]
	text.Name = e4b.Name
	if !reflect.DeepEqual(text, e4b) {
		t.Errorf("the decoder %+v is not gemma-4-e4b's %+v", text, e4b)
	}
}
