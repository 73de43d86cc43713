package gguf

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// Model is a GGUF model: one file, or all the splits of one
// (name-00001-of-00003.gguf …), read as one tensor index. The metadata is
// the first file's, as llama.cpp reads it.
type Model struct {
	Paths   []string
	Files   []*File
	Tensors []TensorInfo // every file's, with File set
}

// Meta is the model's metadata: the first file's.
func (m *Model) Meta() *File { return m.Files[0] }

// splitName matches llama.cpp's split file names (llama_split_path).
var splitName = regexp.MustCompile(`^(.*)-(\d{5})-of-(\d{5})\.gguf$`)

// maxSplits bounds a split count read from a name or a header.
const maxSplits = 256

// Open reads the GGUF header at path, and when the file is one split of a
// model, the headers of all its splits (path may name any of them).
func Open(path string) (*Model, error) {
	first, err := parseFile(path)
	if err != nil {
		return nil, err
	}
	count, _ := first.Uint("split.count")
	if count <= 1 {
		m := &Model{Paths: []string{path}, Files: []*File{first}, Tensors: first.Tensors}
		return m, nil
	}
	mm := splitName.FindStringSubmatch(filepath.Base(path))
	if mm == nil {
		return nil, fmt.Errorf("%s: split.count is %d, but the name is not NAME-0000K-of-0000N.gguf, so the other splits cannot be found", path, count)
	}
	n, _ := strconv.Atoi(mm[3])
	if uint64(n) != count || count > maxSplits {
		return nil, fmt.Errorf("%s: the name says %d splits, split.count says %d (at most %d)", path, n, count, maxSplits)
	}
	m := &Model{}
	total := 0
	for k := 1; k <= n; k++ {
		p := filepath.Join(filepath.Dir(path), fmt.Sprintf("%s-%05d-of-%05d.gguf", mm[1], k, n))
		f := first
		if p != path {
			if f, err = parseFile(p); err != nil {
				return nil, err
			}
		}
		if no, ok := f.Uint("split.no"); !ok || no != uint64(k-1) {
			return nil, fmt.Errorf("%s: split.no is %d, want %d", p, no, k-1)
		}
		if c, _ := f.Uint("split.count"); c != count {
			return nil, fmt.Errorf("%s: split.count is %d, the first split says %d", p, c, count)
		}
		for _, t := range f.Tensors {
			t.File = k - 1
			m.Tensors = append(m.Tensors, t)
		}
		total += len(f.Tensors)
		m.Paths = append(m.Paths, p)
		m.Files = append(m.Files, f)
	}
	if want, ok := m.Files[0].Uint("split.tensors.count"); ok && want != uint64(total) {
		return nil, fmt.Errorf("%s: the splits hold %d tensors, split.tensors.count says %d", m.Paths[0], total, want)
	}
	seen := map[string]bool{}
	for _, t := range m.Tensors {
		if seen[t.Name] {
			return nil, fmt.Errorf("%s: tensor %q is in two splits", m.Paths[0], t.Name)
		}
		seen[t.Name] = true
	}
	return m, nil
}

func parseFile(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	f, err := Parse(fh, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}
