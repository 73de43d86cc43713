// Classifying one checkpoint directory from its config and safetensors
// headers, without reading a tensor.

package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"hearth/engine/checkpoint"
	"hearth/engine/config"
	"hearth/engine/embedding"
	"hearth/engine/families"
	"hearth/engine/family"
	"hearth/engine/fit"
	"hearth/engine/template"
	"hearth/engine/whisper"
	"hearth/media"
)

// Support tiers of a Record.
const (
	TierTargeted    = string(family.Targeted)
	TierGeneric     = string(family.Generic)
	TierUnsupported = "unsupported"
)

// Record describes one checkpoint: a snapshot of a cached repo or a
// registered local directory.
type Record struct {
	ID       string   `json:"id"`       // "org/name", or the absolute directory of a local model
	Revision string   `json:"revision"` // the snapshot's commit; "" for a local directory
	Refs     []string `json:"refs"`     // refs pointing at Revision ("main", …)
	// Digest names the checkpoint's contents (Ollama's digest): see
	// digestOf.
	Digest  string `json:"digest"`
	Dir     string `json:"dir"`     // the snapshot (or local) directory
	Builtin bool   `json:"builtin"` // ships with Hearth (hearth/starter)
	// Store is the other tool whose download this is ("ollama",
	// "lmstudio"), served where it lies; "" for Hearth's own.
	Store        string   `json:"store,omitempty"`
	ModelType    string   `json:"model_type"`
	Family       string   `json:"family"`
	Tier         string   `json:"tier"`   // TierTargeted, TierGeneric or TierUnsupported
	Reason       string   `json:"reason"` // why unsupported
	Fidelity     string   `json:"fidelity"`
	Profile      Profile  `json:"profile"`
	Capabilities []string `json:"capabilities"` // vision/audio only when the tower's tensors are present
	Params       int64    `json:"parameters"`
	Bytes        int64    `json:"bytes"`
	Quantization string   `json:"quantization"` // "q4g64", "bf16", …
	// ContextTokens is max_position_embeddings (0 when unknown).
	ContextTokens int  `json:"context_length"`
	Drafter       bool `json:"drafter"` // a draft model for speculative decoding only
	// Shape is what fit needs; zero when the config or headers are broken.
	Shape fit.Shape `json:"-"`
	// Checkpoint is what the directory says about itself; nil when its
	// config.json is missing or unreadable.
	Checkpoint *checkpoint.Checkpoint `json:"-"`

	err error // why the record cannot be served, for Resolve
}

// Name is how the record is shown and asked for: the ID, with "@" and the
// first ref (or the short commit) when the snapshot is not refs/main.
func (r Record) Name() string {
	if r.Builtin || r.Revision == "" || slices.Contains(r.Refs, "main") {
		return r.ID
	}
	if len(r.Refs) > 0 {
		return r.ID + "@" + r.Refs[0]
	}
	return r.ID + "@" + shortCommit(r.Revision)
}

// Servable reports whether the record can be loaded to serve requests.
func (r Record) Servable() bool { return r.err == nil && !r.Drafter }

// Err is why the record cannot be served (nil when it can). A drafter
// wraps ErrDrafter; an unsupported model_type wraps family.ErrUnsupported.
func (r Record) Err() error {
	if r.err != nil {
		return r.err
	}
	if r.Drafter {
		return fmt.Errorf("%w (it is used beside a target model for speculative decoding)", ErrDrafter)
	}
	return nil
}

// ErrUnservable is wrapped by the error of every record that cannot be
// served because of its own files or config (Record.Err, Resolve): a
// missing config.json, a truncated download, an unsupported model_type
// (which wraps family.ErrUnsupported too).
var ErrUnservable = errors.New("model cannot be served")

// unservable marks a classification's cause with ErrUnservable, keeping
// its message.
type unservable struct{ err error }

func (e unservable) Error() string   { return e.err.Error() }
func (e unservable) Unwrap() []error { return []error{e.err, ErrUnservable} }

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// classify reads dir's config.json and safetensors headers into a record.
// A broken checkpoint is a record with Tier unsupported and the reason,
// never an error: listing must survive any directory.
func classify(dir, id, revision string, refs []string, profiles []ExactProfile) Record {
	rec := Record{ID: id, Revision: revision, Refs: refs, Dir: dir, Tier: TierUnsupported, Capabilities: []string{}}
	rec.Drafter = drafterName(id)
	fail := func(err error) Record {
		rec.Tier = TierUnsupported
		rec.err = unservable{err}
		rec.Reason = err.Error()
		return rec
	}
	if whisper.Detect(dir) {
		// Not a text decoder: its config has none of their keys.
		return classifyWhisper(rec, dir, fail)
	}
	ck, readErr := checkpoint.Read(dir)
	if errors.Is(readErr, checkpoint.ErrNoConfig) {
		return fail(errors.New("no config.json (not a model directory, or an incomplete download; run hearth pull again)"))
	}
	if ck == nil {
		return fail(readErr)
	}
	rec.Checkpoint = ck
	cfg := ck.Config
	rec.ModelType = cfg.ModelType
	rec.ContextTokens = cfg.MaxPositionEmbeddings
	rec.Drafter = rec.Drafter || drafterConfig(cfg)
	if ck.Weights != nil {
		rec.Params, rec.Bytes = ck.Weights.ParamCount, ck.Weights.Bytes
		rec.Shape = families.Shape(cfg, ck.Weights.Bytes)
	}
	rec.Quantization = ck.Quantization()
	fam, famErr := families.Resolve(cfg)
	if famErr == nil {
		rec.Family = fam.Name
	}
	for _, err := range []error{famErr, readErr} {
		if err != nil {
			return fail(err)
		}
	}
	present := ck.Towers
	prof, err := resolveProfile(profiles, id, revision, ck.ConfigJSON, fam, present)
	if err != nil {
		return fail(err)
	}
	rec.Profile = prof
	rec.Tier = string(prof.Tier)
	rec.Fidelity = prof.Fidelity
	rec.Capabilities = capabilities(fam.Caps|families.Towers(cfg, fam), present)
	if slices.Contains(rec.Capabilities, "vision") && families.TakesVideo(cfg) && hasVideoProcessor(dir) {
		rec.Capabilities = append(rec.Capabilities, "video")
		sort.Strings(rec.Capabilities)
	}
	// Embeddings where the checkpoint says how to pool (its
	// sentence-transformers files) and the family gives hidden states, as
	// the loaded runner decides (engine.Runner.Embed).
	if _, err := embedding.Read(dir); err == nil && fam.Tier == family.Generic && !slices.Contains(rec.Capabilities, "embeddings") {
		rec.Capabilities = append(rec.Capabilities, "embeddings")
		sort.Strings(rec.Capabilities)
	}
	if err := dryRender(dir); err != nil {
		return fail(err)
	}
	return rec
}

// hasVideoProcessor reports whether dir's processor configs define a video
// processor, as the loaded model needs to take clips.
func hasVideoProcessor(dir string) bool {
	p, err := media.LoadImageProcessor(dir)
	return err == nil && p.VideoProcessor != nil
}

// dryMessages is the conversation a chat template must render for its
// model to be listed as supported.
var dryMessages = json.RawMessage(`[{"role":"user","content":"Hello"}]`)

// dryRenderTime bounds a dry render's wall time. A real template renders
// one message in about a millisecond; listings (the menu's among them)
// classify every model, so a hostile one costs them this much, not the
// 10 s a request may take.
const dryRenderTime = time.Second

// dryRender loads dir's chat template and renders a one-message
// conversation under the limits a request renders under (with less time): a template
// that does not parse, raises, or runs past a limit (a macro recursing
// without end, a loop that never ends) makes the model unsupported, with
// the reason. A checkpoint without a chat template passes: it serves text
// completions. It reads only the template's files, once per
// classification.
func dryRender(dir string) error {
	tmpl, err := template.Load(dir)
	if errors.Is(err, template.ErrNoTemplate) {
		return nil
	}
	if err != nil {
		return err
	}
	opt := template.Options{AddGenerationPrompt: true, Limits: template.Limits{Time: dryRenderTime}}
	if _, err := tmpl.Render(context.Background(), dryMessages, opt); err != nil {
		return fmt.Errorf("the chat template cannot render a one-message conversation: %w", err)
	}
	return nil
}

// drafterSuffixes end the names of repos that hold only a draft model.
var drafterSuffixes = []string{"_assistant", "-assistant", "-draft", "_draft", "-drafter", "_drafter"}

func drafterName(id string) bool {
	name := strings.ToLower(filepath.Base(id))
	for _, s := range drafterSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// drafterConfig reports a config that declares itself a draft model: an
// EAGLE/Medusa/MTP head architecture, a draft vocabulary, or an explicit
// flag.
func drafterConfig(c *config.Config) bool {
	for _, a := range c.Architectures {
		l := strings.ToLower(a)
		for _, k := range []string{"eagle", "medusa", "drafter", "draftmodel", "mtp"} {
			if strings.Contains(l, k) {
				return true
			}
		}
	}
	for _, k := range []string{"draft_vocab_size", "is_draft_model", "is_drafter"} {
		v, ok := c.Text[k]
		if ok && string(v) != "false" && string(v) != "null" {
			return true
		}
	}
	return false
}

// capabilities is what the family can do, with vision and audio kept only
// when the checkpoint holds the tower.
func capabilities(fam, present family.Caps) []string {
	towerCaps := family.Vision | family.Audio
	names := (fam&^towerCaps | fam&present&towerCaps).Names()
	if names == nil {
		names = []string{}
	}
	sort.Strings(names)
	return names
}
