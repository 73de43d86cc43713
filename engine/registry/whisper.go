package registry

import (
	"errors"
	"strings"

	"hearth/engine/family"
	"hearth/engine/fit"
	"hearth/engine/tensor"
	"hearth/engine/weights"
	"hearth/engine/whisper"
)

// CapTranscription is the capability of a speech-to-text checkpoint
// (Whisper), served by POST /v1/audio/transcriptions rather than chat.
const CapTranscription = "transcription"

// whisperFidelity is what engine/whisper is held to
// (testdata/models/whisper-f32, docs/design/whisper.md).
const whisperFidelity = "parity vs transformers 5.17 (f32 encoder and logits max-abs ≤ 1e-4, greedy ids exact)"

// classifyWhisper finishes the record of a Whisper checkpoint: not a text
// family, so no family, profile or chat template applies; it transcribes
// when its config reads and its weights hold the encoder and the decoder.
func classifyWhisper(rec Record, dir string, fail func(error) Record) Record {
	rec.Family, rec.ModelType = "whisper", "whisper"
	c, err := whisper.ReadConfig(dir)
	if err != nil {
		return fail(err)
	}
	sum, err := weights.Scan(dir, weights.QuantConfig{})
	if err != nil {
		return fail(err)
	}
	rec.Params, rec.Bytes = sum.ParamCount, sum.Bytes
	rec.Shape = fit.Shape{WeightBytes: sum.Bytes}
	var names []string
	bytes := map[tensor.DType]int64{}
	for _, t := range sum.Tensors {
		names = append(names, t.Name)
		bytes[t.DType] += t.Length
	}
	var most tensor.DType
	for d, n := range bytes {
		if n > bytes[most] || n == bytes[most] && d < most {
			most = d
		}
	}
	if most != 0 {
		rec.Quantization = strings.ToLower(most.String())
	}
	if !whisper.Transcribes(names) {
		return fail(errors.New("the weights lack Whisper's encoder (model.encoder.conv1.weight) or decoder (model.decoder.embed_tokens.weight): not a Hugging Face Whisper checkpoint (mlx-community's layout is not read)"))
	}
	if _, err := whisper.ReadGeneration(dir, c); err != nil {
		return fail(err)
	}
	rec.Tier = string(family.Targeted)
	rec.Fidelity = whisperFidelity
	rec.Profile = Profile{Graph: "whisper", Tier: family.Targeted, Fidelity: whisperFidelity, Source: SourceFamily}
	rec.Capabilities = []string{CapTranscription}
	return rec
}
