package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"hearth/engine/family"
)

func TestFingerprint(t *testing.T) {
	a, err := Fingerprint([]byte(`{"model_type": "qwen3", "hidden_size": 64, "rope": {"theta": 1e6, "type": "default"}}`))
	if err != nil {
		t.Fatal(err)
	}
	same := []string{
		`{"hidden_size":64,"model_type":"qwen3","rope":{"type":"default","theta":1e6}}`,
		"{\n  \"rope\": {\"type\": \"default\", \"theta\": 1e6},\n  \"hidden_size\": 64,\n  \"model_type\": \"qwen3\"\n}\n",
	}
	for _, s := range same {
		if b, err := Fingerprint([]byte(s)); err != nil || b != a {
			t.Errorf("Fingerprint(%q) = %s, %v; want %s (only layout differs)", s, b, err, a)
		}
	}
	differ := []string{
		`{"model_type": "qwen3", "hidden_size": 65, "rope": {"theta": 1e6, "type": "default"}}`,
		`{"model_type": "qwen3", "hidden_size": 64, "rope": {"theta": 1000000, "type": "default"}}`, // numbers as written
		`{"model_type": "qwen3", "hidden_size": 64}`,
	}
	for _, s := range differ {
		if b, _ := Fingerprint([]byte(s)); b == a {
			t.Errorf("Fingerprint(%q) = the original's; a value changed", s)
		}
	}
	for _, bad := range []string{"", "{", `{"a":1} {"b":2}`} {
		if _, err := Fingerprint([]byte(bad)); err == nil {
			t.Errorf("Fingerprint(%q) succeeded", bad)
		}
	}
}

func TestResolveProfile(t *testing.T) {
	cfg := []byte(`{"model_type": "qwen3", "hidden_size": 64}`)
	fp, err := Fingerprint(cfg)
	if err != nil {
		t.Fatal(err)
	}
	generic := &family.Family{Name: "universal", Tier: family.Generic, Fidelity: "generic parity"}
	targeted := &family.Family{Name: "gemma4", Tier: family.Targeted, Fidelity: "targeted parity", Caps: family.Vision | family.Tools}
	pinned := Profile{Graph: "gemma4", Tier: family.Targeted, Fidelity: "per-artifact parity run", RequiredCaps: []string{"vision"}}
	// A test-only table: the real one is empty until a measured entry arrives.
	table := []ExactProfile{{Repo: "google/gemma-4-tiny", Revision: commit("a"), ConfigSHA256: fp, Profile: pinned}}
	tests := []struct {
		name     string
		repo     string
		rev      string
		config   []byte
		fam      *family.Family
		present  family.Caps
		want     Profile
		contains string // error
	}{
		{"exact artifact wins", "google/gemma-4-tiny", commit("a"), cfg, targeted, family.Vision, Profile{Source: SourceExact, Graph: "gemma4", Tier: family.Targeted, Fidelity: "per-artifact parity run", RequiredCaps: []string{"vision"}}, ""},
		{"reformatted config still matches", "google/gemma-4-tiny", commit("a"), []byte("{\"hidden_size\": 64,\n \"model_type\": \"qwen3\"}"), targeted, family.Vision, Profile{Source: SourceExact, Graph: "gemma4", Tier: family.Targeted, Fidelity: "per-artifact parity run", RequiredCaps: []string{"vision"}}, ""},
		{"changed config refuses", "google/gemma-4-tiny", commit("a"), []byte(`{"model_type": "qwen3", "hidden_size": 128}`), targeted, family.Vision, Profile{}, "refusing to fall back"},
		{"missing tower refuses", "google/gemma-4-tiny", commit("a"), cfg, targeted, 0, Profile{}, `requires "vision"`},
		{"other revision is another artifact", "google/gemma-4-tiny", commit("b"), cfg, targeted, 0, Profile{Source: SourceFamily, Graph: "gemma4", Tier: family.Targeted, Fidelity: "targeted parity"}, ""},
		{"family", "google/other", commit("a"), cfg, targeted, 0, Profile{Source: SourceFamily, Graph: "gemma4", Tier: family.Targeted, Fidelity: "targeted parity"}, ""},
		{"generic", "Qwen/Qwen3-Tiny", commit("a"), cfg, generic, 0, Profile{Source: SourceGeneric, Graph: "universal", Tier: family.Generic, Fidelity: "generic parity"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveProfile(table, tt.repo, tt.rev, tt.config, tt.fam, tt.present)
			if tt.contains != "" {
				if err == nil || !strings.Contains(err.Error(), tt.contains) {
					t.Fatalf("resolveProfile = %+v, %v; want an error containing %q", got, err, tt.contains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Source != tt.want.Source || got.Graph != tt.want.Graph || got.Tier != tt.want.Tier || got.Fidelity != tt.want.Fidelity || strings.Join(got.RequiredCaps, ",") != strings.Join(tt.want.RequiredCaps, ",") {
				t.Errorf("resolveProfile = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestExactProfileRefusesThroughResolve pins a testdata model's snapshot
// to a fingerprint it does not have: Resolve must refuse it rather than
// serve it on the generic profile.
func TestExactProfileRefusesThroughResolve(t *testing.T) {
	cache := t.TempDir()
	files := modelFiles(t, "qwen3-f32")
	fakeRepo(t, cache, "Qwen/Qwen3-Tiny", commit("a"), files, "main")
	reg := New(cache)
	var cfg []byte
	for _, f := range files {
		if f.name == "config.json" {
			cfg = f.data
		}
	}
	fp, err := Fingerprint(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prof := Profile{Graph: "universal", Tier: family.Generic, Fidelity: "pinned parity"}
	reg.profiles = []ExactProfile{{Repo: "Qwen/Qwen3-Tiny", Revision: commit("a"), ConfigSHA256: fp, Profile: prof}}
	rec, err := reg.Resolve("Qwen/Qwen3-Tiny")
	if err != nil || rec.Profile.Source != SourceExact || rec.Fidelity != "pinned parity" {
		t.Fatalf("Resolve with a matching pin = %+v, %v", rec.Profile, err)
	}
	// A registry's profiles are fixed when it is made (its records are
	// memoized): a new one with the pin changed.
	pins := []ExactProfile{reg.profiles[0]}
	pins[0].ConfigSHA256 = strings.Repeat("0", 64)
	reg = New(cache)
	reg.profiles = pins
	rec, err = reg.Resolve("Qwen/Qwen3-Tiny")
	if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "refusing to fall back") || rec.Tier != TierUnsupported {
		t.Fatalf("Resolve with a mismatching pin = %+v, %v; want a refusal", rec, err)
	}
}

func FuzzFingerprint(f *testing.F) {
	f.Add([]byte(`{"model_type": "qwen3", "hidden_size": 64, "rope": {"theta": 1e6}}`))
	f.Add([]byte(`{"a": [1, 2.50, -0, "x\u00e9"], "b": null, "c": true}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fp, err := Fingerprint(b)
		if err != nil {
			return
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, b, "", "  "); err != nil {
			return // json.Indent is stricter about trailing data than a Decoder
		}
		if again, err := Fingerprint(indented.Bytes()); err != nil || again != fp {
			t.Fatalf("re-indenting %q changed the fingerprint: %s, %v; was %s", b, again, err, fp)
		}
	})
}
