// Set: an opened checkpoint, every shard mapped read-only.

package weights

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Set is an opened checkpoint: every shard mmap'd read-only. The byte slices
// it hands out alias the mappings: they must not be written, and they are
// invalid after Close.
type Set struct {
	maps    [][]byte // per file, in files order
	huge    [][]byte // per file: the readHuge mapping holding maps[i], or nil
	allocs  [][]byte // Alloc's memory, freed at Close
	files   []string
	tensors map[string]tensorRef
	names   []string
	closed  bool
}

// tensorRef locates one tensor in the Set.
type tensorRef struct {
	info Info
	file int    // index into Set.maps
	data []byte // the bytes themselves when Place put them (assembled.go)
}

// Open maps the checkpoint in dir (model.safetensors, or
// model.safetensors.index.json and its shards, or every *.safetensors) and
// validates every header against the mapped bytes.
func Open(dir string) (*Set, error) { return OpenWith(dir, OpenOptions{}) }

// OpenOptions change how Open holds the files.
type OpenOptions struct {
	// HugePages reads each shard into anonymous memory advised for
	// transparent huge pages instead of mapping it (Linux; elsewhere, when
	// THP is off, or when the copy would leave under 1 GB of memory
	// available, the shard is mapped). For a backend that reads weights in
	// place, streaming them then misses the TLB once per 2 MB instead of
	// per 4 KB: on the CPU backend, a decode step 8–14% shorter
	// (docs/design/cpu.md). The process then holds the weights as
	// anonymous memory, about the resident size of the mapping it replaces;
	// the kernel's page cache may keep the file too, as reclaimable cache.
	HugePages bool
}

// add maps the file at path into s: read onto huge pages when opt asks
// and the platform has them, else mapped.
func (s *Set) add(path string, opt OpenOptions) error {
	var data, huge []byte
	var err error
	if opt.HugePages {
		data, huge, err = readHuge(path)
	}
	if err == nil && huge == nil {
		data, err = mapFile(path)
	}
	if err != nil {
		return err
	}
	s.maps = append(s.maps, data)
	s.huge = append(s.huge, huge)
	return nil
}

// OpenWith is Open with options.
func OpenWith(dir string, opt OpenOptions) (*Set, error) {
	l, err := discover(dir)
	if err != nil {
		return nil, err
	}
	s := &Set{files: l.files}
	for _, name := range l.files {
		if err := s.add(filepath.Join(dir, name), opt); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.index(l); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// index parses the header of every mapped file and fills s.tensors and
// s.names; s.files and s.maps are set, in l.files order.
func (s *Set) index(l layout) error {
	perFile := make([][]Info, len(s.files))
	fileIndex := map[string]int{}
	for i, name := range s.files {
		fileIndex[name] = i
		data := s.maps[i]
		infos, _, err := parseHeader(bytes.NewReader(data), int64(len(data)), name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		perFile[i] = infos
	}
	all, err := l.assemble(perFile)
	if err != nil {
		return err
	}
	s.tensors = make(map[string]tensorRef, len(all))
	for _, in := range all {
		s.tensors[in.Name] = tensorRef{info: in, file: fileIndex[in.File]}
		s.names = append(s.names, in.Name)
	}
	return nil
}

// Close unmaps every shard. Slices returned by Bytes are invalid afterwards.
func (s *Set) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for i, m := range s.maps {
		var err error
		if s.huge[i] != nil {
			err = freeAnon(s.huge[i]) // m lies inside it
		} else {
			err = unmapFile(m)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.files[i], err))
		}
	}
	s.maps = nil
	for _, b := range s.allocs {
		if err := freeAnon(b); err != nil {
			errs = append(errs, err)
		}
	}
	s.allocs = nil
	return errors.Join(errs...)
}

// Alloc returns n zeroed bytes that live as long as the Set, outside the Go
// heap (anonymous memory where the OS maps it): for weights a model
// assembles from several tensors at load, such as experts stacked into one
// tensor, which then cost the process once and no garbage-collector
// headroom. Close frees them, so they follow the same rule as the mapped
// files: valid until Close.
func (s *Set) Alloc(n int) ([]byte, error) {
	if s.closed {
		return nil, errors.New("weights: Alloc after Close")
	}
	b, err := allocAnon(n)
	if err != nil {
		return nil, err
	}
	s.allocs = append(s.allocs, b)
	return b, nil
}

// Names returns every tensor name in the checkpoint, sorted.
func (s *Set) Names() []string { return slices.Clone(s.names) }

// Info returns the header record of the named tensor.
func (s *Set) Info(name string) (Info, bool) {
	r, ok := s.tensors[name]
	if !ok {
		return Info{}, false
	}
	in := r.info
	in.Shape = slices.Clone(in.Shape)
	return in, true
}

// Bytes returns the named tensor's bytes inside the mapping (read-only). It
// reports false for an unknown name or a closed Set.
func (s *Set) Bytes(name string) ([]byte, bool) {
	r, ok := s.tensors[name]
	if !ok || s.closed {
		return nil, false
	}
	if r.data != nil {
		return r.data, true
	}
	m := s.maps[r.file]
	end := r.info.Offset + r.info.Length
	return m[r.info.Offset:end:end], true
}

// openSized opens path and returns it with its size, refusing
// directories and files too large to address.
func openSized(path string) (*os.File, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if st.IsDir() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: is a directory", filepath.Base(path))
	}
	size := st.Size()
	if int64(int(size)) != size {
		f.Close()
		return nil, 0, fmt.Errorf("%s: %d bytes is too large to map", filepath.Base(path), size)
	}
	return f, int(size), nil
}
