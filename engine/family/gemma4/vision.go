package gemma4

import (
	"slices"
	"strings"

	"hearth/engine/config"
	"hearth/engine/family"
	"hearth/engine/tensor"
)

// Pictures (engine/tower/gemma4vision) go through Batch.Media like every
// tower's rows. Gemma4Model embeds a media row as pad_token_id, for the
// embedding and the per-layer table alike, and with
// use_bidirectional_attention "vision" lets each picture's soft tokens see
// each other on sliding layers only (create_masks_for_vision_model:
// sliding AND(window, OR(causal, block)), full layers causal).

// mediaTokens is the batch's host tokens with every media row (from
// MediaRows) set to the pad id.
func mediaTokens(b *family.Batch, from [][]int32, pad int32) []int32 {
	if len(b.Media) == 0 {
		return b.Tokens
	}
	tokens := slices.Clone(b.Tokens)
	for _, f := range from {
		for r, src := range f {
			if src >= 0 {
				tokens[r] = pad
			}
		}
	}
	return tokens
}

// padID is the text config's pad_token_id (Gemma4TextConfig's default 0).
func padID(c *config.Config) int32 {
	if c.PadTokenID != nil && *c.PadTokenID >= 0 && *c.PadTokenID < c.VocabSize {
		return int32(*c.PadTokenID)
	}
	return 0
}

// pictureSpans keeps the spans of the media items that are pictures (a
// vision tower's rows carry their grid; get_block_sequence_ids_for_mask
// makes blocks of image and video tokens only), when the config makes
// them bidirectional.
func (m *Model) pictureSpans(b *family.Batch, spans []tensor.Span) []tensor.Span {
	if !m.s.visionBidi {
		return nil
	}
	var out []tensor.Span
	for i, md := range b.Media {
		if md.Grid[0] > 0 {
			out = append(out, spans[i])
		}
	}
	return out
}

// ignoreFor is what the audit may leave unread: the towers' tensors,
// except the vision tower's where the engine runs it (a gemma4 checkpoint
// with a vision_config), which must then read every one of them.
func ignoreFor(c *config.Config) []string {
	if c.ModelType != "gemma4" || !c.HasVisionConfig && !c.HasAudioConfig {
		return towerTensors
	}
	var out []string
	for _, p := range towerTensors {
		// likewise the audio tower's (engine/tower/gemma4audio)
		if !(c.HasVisionConfig && strings.Contains(p, "vision")) && !(c.HasAudioConfig && strings.Contains(p, "audio")) {
			out = append(out, p)
		}
	}
	return out
}
