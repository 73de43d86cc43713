package parity

import (
	"fmt"
	"testing"

	"hearth/engine"
	"hearth/engine/backend/cpu"
	"hearth/engine/tower/towertest"
)

// TestQwen35MoeVisionTower holds Qwen 3.5 MoE's vision tower to
// transformers' Qwen3_5MoeVisionModel (tools/oracle/make_qwen_moe_vision_goldens.py):
// the blocks' last_hidden_state and the merger's soft tokens. It is
// Qwen3_5VisionModel renamed, so the dense port runs it; this golden
// keeps it so if the two ever part.
func TestQwen35MoeVisionTower(t *testing.T) {
	g, err := towertest.Load(towertest.Qwen35MoeEntry)
	if err != nil {
		t.Fatal(err)
	}
	checkTower(t, g, towertest.Dir(towertest.Qwen35MoeEntry), cpu.New(cpu.Options{}))
}

// TestQwen35MoeVisionPrompt holds Qwen 3.5 MoE's image prompts to
// transformers: the soft tokens spliced into the sparse decoder with
// get_rope_index's position streams; every logit within the tolerance,
// the greedy ids exact, in one pass and in chunks of 5.
func TestQwen35MoeVisionPrompt(t *testing.T) {
	g, err := towertest.Load(towertest.Qwen35MoeEntry)
	if err != nil {
		t.Fatal(err)
	}
	for _, chunk := range []int{512, 5} {
		t.Run(fmt.Sprintf("chunk%d", chunk), func(t *testing.T) {
			checkVisionPrompts(t, g, towertest.Dir(towertest.Qwen35MoeEntry), engine.Options{Backend: "cpu", ChunkTokens: chunk})
		})
	}
}
