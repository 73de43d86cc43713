// Classifying one checkpoint directory from its config and safetensors
// headers, without reading a tensor.

package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"hearth/engine/config"
	"hearth/engine/families"
	"hearth/engine/family"
	"hearth/engine/fit"
	"hearth/engine/template"
	"hearth/engine/tensor"
	"hearth/engine/weights"
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
	ID           string   `json:"id"`       // "org/name", or the absolute directory of a local model
	Revision     string   `json:"revision"` // the snapshot's commit; "" for a local directory
	Refs         []string `json:"refs"`     // refs pointing at Revision ("main", …)
	Dir          string   `json:"dir"`      // the snapshot (or local) directory
	Builtin      bool     `json:"builtin"`  // ships with Hearth (hearth/starter)
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

	err error // why the record cannot be served, for Resolve
}

// Name is how the record is shown and asked for: the ID, with "@" and the
// first ref (or the short commit) when the snapshot is not refs/main.
func (r Record) Name() string {
	if r.Builtin || r.Revision == "" || containsString(r.Refs, "main") {
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
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return fail(errors.New("no config.json (not a model directory, or an incomplete download; run hearth pull again)"))
	}
	if err != nil {
		return fail(err)
	}
	gen, _ := os.ReadFile(filepath.Join(dir, "generation_config.json"))
	cfg, err := config.Parse(raw, gen)
	if err != nil {
		return fail(fmt.Errorf("config.json: %w", err))
	}
	rec.ModelType = cfg.ModelType
	rec.ContextTokens = cfg.MaxPositionEmbeddings
	rec.Drafter = rec.Drafter || drafterConfig(cfg)

	sum, scanErr := weights.Scan(dir)
	if missing := danglingLinks(dir); len(missing) > 0 {
		sum, scanErr = nil, fmt.Errorf("%s: the download did not finish (the file's blob is missing); run hearth pull again", strings.Join(missing, ", "))
	}
	if scanErr != nil {
		sum = nil
	} else {
		rec.Params, rec.Bytes = sum.ParamCount, sum.Bytes
		rec.Shape = fit.FromConfig(cfg, sum.Bytes)
	}
	rec.Quantization = quantLabel(cfg, sum)
	fam, famErr := families.Resolve(cfg)
	if famErr == nil {
		rec.Family = fam.Name
	}
	_, quantErr := weights.ParseQuantConfig(cfg.Quantization)
	for _, err := range []error{quantErr, famErr, scanErr} {
		if err != nil {
			return fail(err)
		}
	}
	present := towers(sum)
	prof, err := resolveProfile(profiles, id, revision, raw, fam, present)
	if err != nil {
		return fail(err)
	}
	rec.Profile = prof
	rec.Tier = string(prof.Tier)
	rec.Fidelity = prof.Fidelity
	rec.Capabilities = capabilities(fam.Caps, present)
	if err := dryRender(dir); err != nil {
		return fail(err)
	}
	return rec
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

// danglingLinks lists the files of dir (a snapshot), down to two folders
// deep, that are symlinks to a blob that is not there: what an interrupted
// huggingface_hub download leaves behind.
func danglingLinks(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && path != dir && strings.Count(strings.TrimPrefix(path, dir), string(filepath.Separator)) >= 3 {
			return filepath.SkipDir // repo files sit at most a folder or two down; a local path may be any tree
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
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

// quantLabel names how the weights are stored: "q4g64" for MLX affine
// quantization (the default bits and group size), "mixed" when only some
// modules say, the quant_method of another scheme ("gptq", "fp8"), or the
// dtype holding most bytes ("bf16").
func quantLabel(c *config.Config, sum *weights.Summary) string {
	if len(c.Quantization) > 0 {
		qc, err := weights.ParseQuantConfig(c.Quantization)
		switch {
		case err == nil && qc.Label() != "":
			return qc.Label()
		case err != nil:
			var q struct {
				Method string `json:"quant_method"`
			}
			if json.Unmarshal(c.Quantization, &q) == nil && q.Method != "" {
				return strings.ToLower(q.Method)
			}
			return "unknown"
		}
	}
	if sum == nil {
		// The headers are unreadable: say what the config claims.
		for _, k := range []string{"dtype", "torch_dtype"} {
			var d string
			if json.Unmarshal(c.Text[k], &d) == nil {
				if l, ok := dtypeLabels[d]; ok {
					return l
				}
			}
		}
		return ""
	}
	bytes := map[tensor.DType]int64{}
	for _, t := range sum.Tensors {
		bytes[t.DType] += t.Length
	}
	var best tensor.DType
	for d, n := range bytes {
		if n > bytes[best] || n == bytes[best] && d < best {
			best = d
		}
	}
	if best == 0 {
		return ""
	}
	return strings.ToLower(best.String())
}

// dtypeLabels maps config.json's dtype names onto quantization labels.
var dtypeLabels = map[string]string{"float32": "f32", "bfloat16": "bf16", "float16": "f16"}

// towerPrefixes are the tensor-name components that hold a vision or audio
// tower in the checkpoints Hugging Face and mlx-vlm ship.
var towerPrefixes = map[family.Caps][]string{
	family.Vision: {"vision_tower", "visual", "vision_model", "vision_encoder", "image_encoder", "vision_embed_tokens"},
	family.Audio:  {"audio_tower", "audio_model", "audio_encoder", "speech_encoder", "audio_embed_tokens"},
}

// towers reports which towers have tensors in the checkpoint: a name whose
// first or second component ("model.vision_tower.…") is a tower prefix.
func towers(sum *weights.Summary) family.Caps {
	var caps family.Caps
	for _, t := range sum.Tensors {
		parts := strings.SplitN(t.Name, ".", 3)
		for c, prefixes := range towerPrefixes {
			for _, p := range prefixes {
				if parts[0] == p || len(parts) > 1 && parts[1] == p {
					caps |= c
				}
			}
		}
	}
	return caps
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

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
