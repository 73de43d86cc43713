// Profiles: what runs a checkpoint, decided before any weight opens.
//
// Resolution order, as data: an exact artifact profile (a pinned
// org/repo@commit plus the fingerprint of its config.json) wins; else the
// family the engine resolves (a targeted port); else the generic tier. An
// exact profile whose pin matches but whose fingerprint or required
// capabilities do not refuses the checkpoint instead of falling back: the
// profile was measured on other files, and quietly running the family
// graph would claim a fidelity nobody checked.

package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"hearth/engine/family"
)

// Profile is one immutable answer to "what runs this checkpoint".
type Profile struct {
	Source       string      `json:"source"` // "exact", "family" or "generic"
	Graph        string      `json:"graph"`  // the family whose graph runs it
	Tier         family.Tier `json:"tier"`
	Fidelity     string      `json:"fidelity"`
	RequiredCaps []string    `json:"required_capabilities"` // capabilities the checkpoint must have
}

// Sources of a Profile, in resolution order.
const (
	SourceExact   = "exact"
	SourceFamily  = "family"
	SourceGeneric = "generic"
)

// ExactProfile pins a profile to one artifact.
type ExactProfile struct {
	Repo         string // "org/name"
	Revision     string // the full commit hash
	ConfigSHA256 string // Fingerprint of its config.json
	Profile      Profile
}

// exactProfiles is the table of pinned artifacts. There are none yet: an
// entry arrives with a measured per-artifact parity run.
var exactProfiles = []ExactProfile{}

// Fingerprint is the sha256 (hex) of config.json normalized: parsed and
// re-encoded with sorted keys, no insignificant whitespace, numbers kept as
// written. Reformatting a config does not change it; changing a value does.
func Fingerprint(configJSON []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(configJSON))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("config.json: %w", err)
	}
	if dec.More() {
		return "", fmt.Errorf("config.json: data after the top-level value")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("config.json: %w", err)
	}
	sum := sha256.Sum256(bytes.TrimSpace(buf.Bytes()))
	return hex.EncodeToString(sum[:]), nil
}

// resolveProfile picks the profile of the checkpoint repo@revision whose
// config.json is configJSON, given the family the engine resolved for it
// and the towers its tensors hold.
func resolveProfile(table []ExactProfile, repo, revision string, configJSON []byte, fam *family.Family, present family.Caps) (Profile, error) {
	for _, e := range table {
		if e.Repo != repo || e.Revision != revision {
			continue
		}
		fp, err := Fingerprint(configJSON)
		if err != nil {
			return Profile{}, err
		}
		if fp != e.ConfigSHA256 {
			return Profile{}, fmt.Errorf("profile for %s@%s is pinned to config fingerprint %s, but this config.json has %s; refusing to fall back to the family profile (re-download it with hearth pull)",
				repo, shortCommit(revision), shortCommit(e.ConfigSHA256), shortCommit(fp))
		}
		have := capabilities(fam.Caps|present, present)
		for _, c := range e.Profile.RequiredCaps {
			if !slices.Contains(have, c) {
				return Profile{}, fmt.Errorf("profile for %s@%s requires %q, which this checkpoint does not have (are its tower tensors missing?)", repo, shortCommit(revision), c)
			}
		}
		p := e.Profile
		p.Source = SourceExact
		return p, nil
	}
	p := Profile{Graph: fam.Name, Tier: fam.Tier, Fidelity: fam.Fidelity, Source: SourceFamily}
	if fam.Tier == family.Generic {
		p.Source = SourceGeneric
	}
	return p, nil
}
