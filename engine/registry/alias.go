// Aliases: other names for models on this machine (what Ollama's copy
// makes), kept in a small JSON file beside Hearth's other state, never in
// the Hugging Face cache (huggingface_hub reports any foreign entry there
// as a corrupted repo).

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
)

// ErrNameTaken: a name given to a model already names another model.
var ErrNameTaken = errors.New("name already in use")

// Alias is one other name for a model: Target is the name the model is
// resolved by ("org/name", "org/name@ref", a built-in id), so an alias of
// a repo follows its refs/main as the repo's own name does.
type Alias struct {
	Name   string `json:"name"`
	Target string `json:"target"`
}

// aliasFile is the table on disk.
type aliasFile struct {
	Aliases map[string]string `json:"aliases"` // name → target
}

// WithAliases keeps r's alias table in the file at path (created on the
// first Copy) and returns r. Without it, r resolves no alias and Copy
// fails.
func (r *Registry) WithAliases(path string) *Registry {
	r.aliasPath = path
	return r
}

// readAliases reads the table; a missing file is an empty one.
func (r *Registry) readAliases() (map[string]string, error) {
	if r.aliasPath == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(r.aliasPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read aliases: %w", err)
	}
	var f aliasFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("read aliases %s: %w", r.aliasPath, err)
	}
	return f.Aliases, nil
}

// aliasTarget is what name is an alias of, if it is one. A table that
// cannot be read holds no alias (Aliases and Copy report the error).
func (r *Registry) aliasTarget(name string) (string, bool) {
	table, _ := r.readAliases()
	t, ok := table[name]
	return t, ok
}

// Aliases lists the alias table, sorted by name.
func (r *Registry) Aliases() ([]Alias, error) {
	table, err := r.readAliases()
	if err != nil {
		return nil, err
	}
	out := make([]Alias, 0, len(table))
	for name, target := range table {
		out = append(out, Alias{Name: name, Target: target})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// editAliases changes the table under a lock (a CLI and a server may
// share it) and writes it back whole, atomically.
func (r *Registry) editAliases(edit func(map[string]string) error) error {
	if r.aliasPath == "" {
		return errors.New("this registry keeps no alias table")
	}
	if err := os.MkdirAll(filepath.Dir(r.aliasPath), 0o755); err != nil {
		return fmt.Errorf("write aliases: %w", err)
	}
	unlock, err := lockFile(context.Background(), r.aliasPath+".lock")
	if err != nil {
		return fmt.Errorf("lock aliases: %w", err)
	}
	defer unlock()
	table, err := r.readAliases()
	if err != nil {
		return err
	}
	if table == nil {
		table = map[string]string{}
	}
	if err := edit(table); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(aliasFile{Aliases: table}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(r.aliasPath), ".aliases-*")
	if err != nil {
		return fmt.Errorf("write aliases: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(raw, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write aliases: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write aliases: %w", err)
	}
	if err := os.Rename(tmp.Name(), r.aliasPath); err != nil {
		return fmt.Errorf("write aliases: %w", err)
	}
	return nil
}

// Copy makes destination another name for the model source names (any
// name ResolveName takes, an alias included), as Ollama's copy does; an
// existing alias named destination is replaced. It returns the source's
// record. The destination must not name a model already: a repo, its
// short name, a built-in model or a registered directory (that wraps
// ErrNameTaken).
func (r *Registry) Copy(source, destination string) (Record, error) {
	rec, err := r.ResolveName(source)
	if err != nil {
		return Record{}, err
	}
	if err := checkAliasName(destination); err != nil {
		return Record{}, err
	}
	if _, isAlias := r.aliasTarget(destination); !isAlias {
		_, err := r.resolve(destination, false, false)
		switch {
		case err == nil, errors.Is(err, ErrUnservable), errors.Is(err, ErrAmbiguous), errors.Is(err, ErrDrafter):
			return Record{}, fmt.Errorf("%w: %s already names a model; pick another name", ErrNameTaken, QuoteName(destination))
		case !errors.Is(err, ErrNotFound):
			return Record{}, err
		}
	}
	target := rec.Name()
	err = r.editAliases(func(table map[string]string) error {
		table[destination] = target
		return nil
	})
	return rec, err
}

// RemoveAlias deletes the alias name; false when name is no alias.
func (r *Registry) RemoveAlias(name string) (bool, error) {
	if _, ok := r.aliasTarget(name); !ok {
		return false, nil
	}
	return true, r.editAliases(func(table map[string]string) error {
		delete(table, name)
		return nil
	})
}

// RemoveRepo deletes repo from the cache as Remove does, with the
// aliases of any of its revisions.
func (r *Registry) RemoveRepo(repo string) error {
	if err := Remove(r.cache, repo); err != nil {
		return err
	}
	if r.aliasPath == "" {
		return nil
	}
	table, err := r.readAliases()
	if err != nil {
		return err
	}
	var gone []string
	for name, target := range table {
		if t, _, _ := strings.Cut(target, "@"); t == repo {
			gone = append(gone, name)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	return r.editAliases(func(table map[string]string) error {
		for _, name := range gone {
			delete(table, name)
		}
		return nil
	})
}

// maxAliasBytes bounds an alias name: as long as the longest repo id.
const maxAliasBytes = 193

// checkAliasName checks that name can be an alias: letters, digits and
// "-_.:/", not written as a path, without "@" (which starts a revision).
func checkAliasName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %s cannot be a model name (%s)", ErrInvalidName, QuoteName(name), why)
	}
	switch {
	case name == "":
		return bad("it is empty")
	case len(name) > maxAliasBytes:
		return bad(fmt.Sprintf("at most %d bytes", maxAliasBytes))
	case isPath(name) || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "-") || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/"):
		return bad("it reads as a path or a flag")
	case strings.Contains(name, "..") || strings.Contains(name, "//"):
		return bad(`".." and "//" are not allowed`)
	}
	for _, c := range name {
		ok := c == '-' || c == '_' || c == '.' || c == ':' || c == '/' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !ok {
			return bad(fmt.Sprintf("the character %q; allowed: letters, digits, '-', '_', '.', ':', '/'", c))
		}
	}
	return nil
}
