package registry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"hearth/engine/gguf"
	"hearth/internal/readfile"
)

// Other tools' model stores: the GGUF files Ollama and LM Studio
// downloaded, listed and served where they lie (nothing is copied). Their
// records are named "ollama:NAME" (Ollama's own name, "llama3.2:3b" for
// its library, "user/model:tag" otherwise) and "lmstudio:PUBLISHER/REPO/
// FILE.gguf".

// Stores are the folders where other tools keep models.
type Stores struct {
	// Ollama is Ollama's models folder (manifests/ and blobs/); "" for none.
	Ollama string
	// LMStudio are LM Studio's models folders (PUBLISHER/REPO/*.gguf).
	LMStudio []string
}

// DefaultStores are this user's stores: $OLLAMA_MODELS or ~/.ollama/models,
// and ~/.lmstudio/models and ~/.cache/lm-studio/models (LM Studio's
// current and older default). A folder that does not exist lists nothing.
func DefaultStores(getenv func(string) string, home string) Stores {
	s := Stores{Ollama: getenv("OLLAMA_MODELS")}
	if s.Ollama == "" && home != "" {
		s.Ollama = filepath.Join(home, ".ollama", "models")
	}
	if home != "" {
		s.LMStudio = []string{filepath.Join(home, ".lmstudio", "models"), filepath.Join(home, ".cache", "lm-studio", "models")}
	}
	return s
}

// WithStores lists and resolves the models of s too, and returns r.
func (r *Registry) WithStores(s Stores) *Registry {
	r.stores = s
	return r
}

// storeModel is one GGUF model of a store.
type storeModel struct {
	id     string // the record's name: "ollama:…" or "lmstudio:…"
	path   string // the GGUF file (the first of a split)
	digest string // Ollama's blob digest ("sha256:…"); "" elsewhere
}

const (
	ollamaPrefix   = "ollama:"
	lmstudioPrefix = "lmstudio:"
	// ollamaModelLayer is the manifest layer that holds the GGUF weights
	// (a projector, template, params or license layer is not the model).
	ollamaModelLayer = "application/vnd.ollama.image.model"
	// maxManifestBytes bounds a manifest read (real ones are under 2 kB).
	maxManifestBytes = 1 << 20
)

// ollamaDigest is a blob digest as manifests write it; the blob's file is
// blobs/sha256-HEX. Nothing else may name a file.
var ollamaDigest = regexp.MustCompile(`^sha256:([0-9a-f]{64})$`)

// storeModels lists the stores' models, Ollama's then LM Studio's, each
// sorted by name. Unreadable folders and malformed manifests are skipped:
// they are another tool's, and a listing must not fail for them.
func (s Stores) models() []storeModel {
	out := s.ollamaModels()
	for _, root := range s.LMStudio {
		out = append(out, lmstudioModels(root)...)
	}
	return out
}

// ollamaModels reads manifests/HOST/NAMESPACE/MODEL/TAG.
func (s Stores) ollamaModels() []storeModel {
	if s.Ollama == "" {
		return nil
	}
	root := filepath.Join(s.Ollama, "manifests")
	var out []storeModel
	hosts, _ := os.ReadDir(root)
	for _, h := range hosts {
		spaces, _ := os.ReadDir(filepath.Join(root, h.Name()))
		for _, ns := range spaces {
			models, _ := os.ReadDir(filepath.Join(root, h.Name(), ns.Name()))
			for _, m := range models {
				tags, _ := os.ReadDir(filepath.Join(root, h.Name(), ns.Name(), m.Name()))
				for _, tag := range tags {
					if tag.IsDir() {
						continue
					}
					path, digest, err := s.ollamaBlob(filepath.Join(root, h.Name(), ns.Name(), m.Name(), tag.Name()))
					if err != nil {
						continue
					}
					out = append(out, storeModel{id: ollamaPrefix + ollamaName(h.Name(), ns.Name(), m.Name(), tag.Name()), path: path, digest: digest})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// ollamaName is the name Ollama shows: "model:tag" for its own library,
// "namespace/model:tag" for a user's, with the host for another registry.
func ollamaName(host, namespace, model, tag string) string {
	name := model + ":" + tag
	if namespace != "library" || host != "registry.ollama.ai" {
		name = namespace + "/" + name
	}
	if host != "registry.ollama.ai" {
		name = host + "/" + name
	}
	return name
}

// ollamaBlob reads a manifest and returns its model layer's blob.
func (s Stores) ollamaBlob(manifest string) (path, digest string, err error) {
	raw, err := readfile.Bounded(manifest, maxManifestBytes)
	if err != nil {
		return "", "", err
	}
	var m struct {
		Layers []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", "", fmt.Errorf("manifest %s: %w", manifest, err)
	}
	for _, l := range m.Layers {
		if l.MediaType != ollamaModelLayer {
			continue
		}
		hex := ollamaDigest.FindStringSubmatch(l.Digest)
		if hex == nil {
			return "", "", fmt.Errorf("manifest %s: model layer digest %q", manifest, l.Digest)
		}
		path := filepath.Join(s.Ollama, "blobs", "sha256-"+hex[1])
		if _, err := os.Stat(path); err != nil {
			return "", "", err
		}
		return path, l.Digest, nil
	}
	return "", "", fmt.Errorf("manifest %s: no model layer", manifest)
}

// lmstudioModels lists root/PUBLISHER/REPO/*.gguf: every model file of a
// repo folder (one per quantization), the first of a split standing for
// it, projector files set aside (gguf.Find's rules).
func lmstudioModels(root string) []storeModel {
	var out []storeModel
	pubs, _ := os.ReadDir(root)
	for _, p := range pubs {
		repos, _ := os.ReadDir(filepath.Join(root, p.Name()))
		for _, r := range repos {
			dir := filepath.Join(root, p.Name(), r.Name())
			for _, file := range gguf.Models(dir) {
				out = append(out, storeModel{id: lmstudioPrefix + p.Name() + "/" + r.Name() + "/" + file, path: filepath.Join(dir, file)})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// storeRecord classifies a store's model under its store name.
func (r *Registry) storeRecord(m storeModel) Record {
	rec := r.memo.classify(m.path, m.id, "", nil, r.profiles)
	rec.Store = strings.TrimSuffix(m.id[:strings.Index(m.id, ":")+1], ":")
	if m.digest != "" {
		rec.Digest = m.digest
	}
	return rec
}

// resolveStore finds a store's model by its record name, or, for a bare
// Ollama name ("llama3.2:3b"), by Ollama's name.
func (r *Registry) resolveStore(name string) (Record, bool, error) {
	for _, m := range r.stores.models() {
		if m.id == name || m.id == ollamaPrefix+name {
			rec := r.storeRecord(m)
			return rec, true, wrapName(rec.ID, rec.Err())
		}
	}
	if strings.HasPrefix(name, ollamaPrefix) || strings.HasPrefix(name, lmstudioPrefix) {
		return Record{}, true, r.notFoundIn(name)
	}
	return Record{}, false, nil
}

// notFoundIn is the error for a store name that names nothing, with the
// closest names the stores hold (never a folder: names come over the
// network too).
func (r *Registry) notFoundIn(name string) error {
	var names []string
	for _, m := range r.stores.models() {
		names = append(names, m.id)
	}
	where := "LM Studio's models"
	if strings.HasPrefix(name, ollamaPrefix) {
		where = "Ollama's models"
	}
	msg := fmt.Sprintf("%s is not in %s", QuoteName(name), where)
	if near := closest(name, names, 3); len(near) > 0 {
		msg += " (did you mean " + strings.Join(near, ", ") + "?)"
	}
	return fmt.Errorf("%w: %s; hearth ls lists the models found there", ErrNotFound, msg)
}
