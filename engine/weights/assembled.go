// An assembled Set: the files of a checkpoint in another format (GGUF,
// engine/gguf) mapped as Open maps safetensors shards, each tensor placed
// by the format's reader under the name model code binds.

package weights

import (
	"fmt"
	"path/filepath"
	"slices"
)

// MapFiles maps the files at paths read-only (onto huge pages when opt
// asks, as OpenWith does) for a Set whose tensors the caller places with
// Place: the files are in a format whose reader knows where each tensor
// lies and what it must become.
func MapFiles(paths []string, opt OpenOptions) (*Set, error) {
	s := &Set{tensors: map[string]tensorRef{}}
	for _, path := range paths {
		if err := s.add(path, opt); err != nil {
			s.Close()
			return nil, err
		}
		s.files = append(s.files, filepath.Base(path))
	}
	return s, nil
}

// Mapped returns the bytes of the i-th file given to MapFiles (read-only,
// valid until Close).
func (s *Set) Mapped(i int) []byte {
	if s.closed || i < 0 || i >= len(s.maps) {
		return nil
	}
	return s.maps[i]
}

// Place adds the tensor in.Name (dtype in.DType, shape in.Shape) whose
// bytes are data: a slice of a Mapped file or memory from Alloc, which
// the Set hands out as it does a mapped shard's. The name must be new and
// data exactly the size of the shape.
func (s *Set) Place(in Info, data []byte) error {
	if s.closed {
		return fmt.Errorf("weights: Place %q after Close", in.Name)
	}
	if _, dup := s.tensors[in.Name]; dup {
		return fmt.Errorf("tensor %q is placed twice", in.Name)
	}
	n, ok := elementsChecked(in.Shape)
	if size := in.DType.Size(); !ok || size == 0 || n*int64(size) != int64(len(data)) {
		return fmt.Errorf("tensor %q: %d bytes do not hold %s %v", in.Name, len(data), in.DType, in.Shape)
	}
	if data == nil {
		data = []byte{} // Bytes tells placed data from mapped by nil
	}
	in.Shape = slices.Clone(in.Shape)
	in.Length = int64(len(data))
	s.tensors[in.Name] = tensorRef{info: in, data: data[:len(data):len(data)]}
	i, _ := slices.BinarySearch(s.names, in.Name)
	s.names = slices.Insert(s.names, i, in.Name)
	return nil
}
