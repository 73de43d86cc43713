// Package tower is the seam between a decoder and the media towers that
// turn pictures into its soft tokens (docs/design/vision.md): a tower
// records its forward pass into a graph like a family does, from the
// media package's pixel values, and says how a processor writes a picture
// into the prompt. The towers themselves live in subpackages (siglip).
package tower

import (
	"fmt"

	"hearth/engine/tensor"
	"hearth/media"
)

// Vision is a loaded vision tower with its projector into the decoder's
// embedding space.
type Vision interface {
	// Encode records into g the soft tokens of one picture's pixel values
	// (the model's processor's output): [Prompt().Tokens, decoder hidden].
	Encode(g *tensor.Graph, px media.Pixels) (tensor.T, error)
	// Prompt is how a prompt holds each picture.
	Prompt() Prompt
}

// Prompt is how a model's processor writes a picture into the prompt:
// the chat template writes Placeholder's text for each picture, and the
// processor replaces that text with Before, Begin's text, Tokens times
// Image's text, End's text and After before it tokenizes (Gemma 3's
// full_image_sequence). The Image tokens are the rows the tower's output
// replaces. Begin and End are -1 where the processor writes none (Qwen-VL:
// the chat template already has <|vision_start|> and <|vision_end|>).
// Tokens is 0 where the count depends on the picture (Gridded).
type Prompt struct {
	Placeholder   int32
	Begin, End    int32
	Image         int32
	Tokens        int
	Before, After string
}

// Gridded is a Vision whose soft tokens form a (t, h, w) grid that
// depends on the picture (Qwen-VL's dynamic resolution): the prompt holds
// t·h·w of them, and a decoder with multimodal rotary positions (Qwen's
// mRoPE) places them by the grid.
type Gridded interface {
	Grid(px media.Pixels) [3]int
}

// Clips is a Gridded Vision that also takes video (Qwen-VL): Encode takes
// a clip's pixel values (the video processor's, grid t > 1) and gives
// each temporal patch's soft tokens in turn, t·h·w rows.
type Clips interface {
	Gridded
	VideoPrompt() VideoPrompt
}

// VideoPrompt is how Qwen3-VL's processor writes a clip into the prompt:
// the chat template writes Placeholder's text for each clip, and the
// processor replaces it with, for each temporal patch of frames, the
// patch's time as "<%.1f seconds>", Begin's text, h·w times Video's text
// and End's text. Each patch's Video tokens are the rows its soft tokens
// replace.
type VideoPrompt struct {
	Placeholder, Begin, End, Video int32
	// Frames is Gemma4Processor's way instead: the clip's frames are
	// pictures, Encode takes one at a time (grid t = 1), and each is
	// written as its time ("mm:ss"), a space, Begin, h·w times Video and
	// End, the frames joined by spaces (Placeholder is Video's own text).
	Frames bool
}

// Audio is a loaded audio tower with its projector into the decoder's
// embedding space (docs/design/audio.md).
type Audio interface {
	// Extract is the model's feature extractor over a clip at Rate();
	// cut reports that the clip was longer than the model takes and was
	// cut, as the reference's extractor truncates it.
	Extract(a media.Audio) (f media.Features, cut bool)
	// Rate is the sampling rate Extract takes.
	Rate() int
	// MaxSeconds is the longest clip Extract keeps whole.
	MaxSeconds() float64
	// Tokens is the number of soft tokens Encode gives for f.
	Tokens(f media.Features) int
	// MaxTokens bounds Tokens over every clip.
	MaxTokens() int
	// Encode records into g the soft tokens of one clip's features:
	// [Tokens(f), decoder hidden].
	Encode(g *tensor.Graph, f media.Features) (tensor.T, error)
	// Prompt is how a prompt holds each clip: Placeholder's text becomes
	// Begin, Tokens(f) × Image and End (Tokens is 0: it is per clip).
	Prompt() Prompt
}

// Activation is the graph op of a tower config's hidden_act.
func Activation(name string) (func(*tensor.Graph, tensor.T) tensor.T, error) {
	switch name {
	case "gelu_pytorch_tanh", "gelu_tanh", "gelu_new", "gelu_fast":
		return (*tensor.Graph).GELUTanh, nil
	case "gelu":
		return (*tensor.Graph).GELU, nil
	case "silu", "swish":
		return (*tensor.Graph).SiLU, nil
	}
	return nil, fmt.Errorf("hidden_act %q is not supported (gelu_pytorch_tanh, gelu, silu are)", name)
}
