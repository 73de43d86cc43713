// Package families is the list of model families Hearth runs, in
// resolution order. It is a leaf of the engine: the catalog
// (engine/registry) and the loader (engine) both resolve through it, and it
// pulls in no backend.
package families

import (
	"hearth/engine/config"
	"hearth/engine/family"
	"hearth/engine/family/gemma4"
	"hearth/engine/family/qwen35"
	"hearth/engine/family/universal"
	"hearth/engine/fit"
	"hearth/engine/nn"
	"hearth/engine/tower"
	"hearth/engine/tower/gemma4audio"
	"hearth/engine/tower/gemma4vision"
	"hearth/engine/tower/qwenvl"
	"hearth/engine/tower/siglip"
)

// list is the registry, in resolution order: targeted ports first, the
// generic tier last, so a descriptor never shadows a port.
var list = []*family.Family{&gemma4.Family, &qwen35.Family, &universal.Family}

// Shape is fit.FromConfig with the cache layout of the family that runs c,
// when it declares its own (family.Family.CacheLayers).
func Shape(c *config.Config, weightBytes int64) fit.Shape {
	s := fit.FromConfig(c, weightBytes)
	if f, err := Resolve(c); err == nil && f.CacheLayers != nil {
		if layers, err := f.CacheLayers(c); err == nil {
			s.Layers = layers
		}
	}
	return s
}

// Resolve returns the family that runs c, or an error wrapping
// family.ErrUnsupported that lists the supported model types.
func Resolve(c *config.Config) (*family.Family, error) { return family.Resolve(list, c) }

// VisionLoader binds a checkpoint's vision tower.
type VisionLoader func(raw []byte, c *config.Config, l *nn.Loader) (tower.Vision, error)

// visionTowers are the vision towers Hearth has, by config.json's
// top-level model_type (docs/design/vision.md).
var visionTowers = map[string]VisionLoader{
	"gemma3":      siglip.LoadGemma3,
	"qwen3_5":     qwenvl.Load,
	"qwen3_5_moe": qwenvl.Load, // the same tower class, renamed (docs/design/vision.md)
	"gemma4":      gemma4vision.Load,
}

// VisionTower is the loader of c's vision tower, nil when Hearth has none
// for its model type.
func VisionTower(c *config.Config) VisionLoader { return visionTowers[c.ModelType] }

// AudioLoader binds a checkpoint's audio tower.
type AudioLoader func(raw []byte, c *config.Config, l *nn.Loader) (tower.Audio, error)

// videoTowers are the model types whose vision tower takes clips (it
// implements tower.Clips): the registry lists `video` from it before a
// model loads, and engine's TestVideoListedBeforeLoad holds it to the
// loaded towers.
var videoTowers = map[string]bool{"qwen3_5": true, "qwen3_5_moe": true, "gemma4": true}

// TakesVideo reports whether c's vision tower takes video clips.
func TakesVideo(c *config.Config) bool { return videoTowers[c.ModelType] && VisionTower(c) != nil }

// audioTowers are the audio towers Hearth has, by config.json's top-level
// model_type (docs/design/audio.md).
var audioTowers = map[string]AudioLoader{
	"gemma4": gemma4audio.Load,
}

// AudioTower is the loader of c's audio tower, nil when Hearth has none
// for its model type.
func AudioTower(c *config.Config) AudioLoader { return audioTowers[c.ModelType] }

// Towers are the towers Hearth runs for checkpoints of c: it has them for
// c's model type and f splices their output. A checkpoint takes images
// (audio) when it also holds the tower's weights.
func Towers(c *config.Config, f *family.Family) family.Caps {
	if f == nil || f.Media == nil {
		return 0
	}
	var have family.Caps
	if VisionTower(c) != nil {
		have |= family.Vision
	}
	if AudioTower(c) != nil {
		have |= family.Audio
	}
	return have & f.Media(c)
}
