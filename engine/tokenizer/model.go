package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// modelFields is tokenizer.json's model object, minus vocab and merges.
type modelFields struct {
	Type                    string   `json:"type"`
	Dropout                 *float64 `json:"dropout"`
	UnkToken                *string  `json:"unk_token"`
	ContinuingSubwordPrefix *string  `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string  `json:"end_of_word_suffix"`
	FuseUnk                 bool     `json:"fuse_unk"`
	ByteFallback            bool     `json:"byte_fallback"`
	IgnoreMerges            bool     `json:"ignore_merges"`
}

// modelJSON is the model object as scanned: its small fields, and the text
// of the vocabulary and the merges, unescaped but not yet resolved to ids.
type modelJSON struct {
	fields    modelFields
	hasVocab  bool
	vocab     []byte   // every token, back to back
	vocabEnds []uint32 // end of each token in vocab
	vocabIDs  []int32  // id of each token
	maxID     int32
	merges    []byte   // both parts of every merge, back to back
	mergeEnds []uint32 // per merge: end of the first part, end of the second
}

// scanModel reads the model object at s in one pass: tokenizer.json files
// run to tens of megabytes, nearly all of it vocabulary and merges.
func scanModel(s *jsonScanner) (*modelJSON, error) {
	mj := &modelJSON{maxID: -1}
	small := []byte{'{'}
	err := s.object(func(key string) error {
		switch key {
		case "vocab":
			if err := mj.scanVocab(s); err != nil {
				return fmt.Errorf("vocab: %w", err)
			}
			return nil
		case "merges":
			if err := mj.scanMerges(s); err != nil {
				return fmt.Errorf("merges: %w", err)
			}
			return nil
		}
		v, err := s.skip()
		if len(small) > 1 {
			small = append(small, ',')
		}
		k, _ := json.Marshal(key)
		small = append(append(append(small, k...), ':'), v...)
		return err
	})
	if err != nil {
		return nil, err
	}
	small = append(small, '}')
	if err := json.Unmarshal(small, &mj.fields); err != nil {
		return nil, err
	}
	if mj.fields.Type == "" && mj.mergeEnds != nil {
		mj.fields.Type = "BPE"
	}
	return mj, nil
}

// scanVocab reads {"token": id, …}.
func (mj *modelJSON) scanVocab(s *jsonScanner) error {
	if s.peek() != '{' { // null, or another model's vocabulary shape
		_, err := s.skip()
		return err
	}
	mj.hasVocab = true
	if mj.vocab == nil { // the same kind of guess as scanMerges makes
		left := len(s.b) - s.pos
		mj.vocab = make([]byte, 0, left/8)
		mj.vocabEnds = make([]uint32, 0, left/64)
		mj.vocabIDs = make([]int32, 0, left/64)
	}
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		var err error
		if mj.vocab, err = s.str(mj.vocab); err != nil {
			return err
		}
		mj.vocabEnds = append(mj.vocabEnds, uint32(len(mj.vocab)))
		if err := s.expect(':'); err != nil {
			return err
		}
		id, err := s.int()
		if err != nil {
			return err
		}
		if id < 0 || id >= 1<<31-1 {
			return fmt.Errorf("token %d has id %d", len(mj.vocabIDs), id)
		}
		mj.vocabIDs = append(mj.vocabIDs, int32(id))
		mj.maxID = max(mj.maxID, int32(id))
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			if len(mj.vocab) > 1<<32-1 {
				return fmt.Errorf("vocabulary too large")
			}
			return nil
		default:
			return s.errorf("want ',' or '}'")
		}
	}
}

// scanMerges reads merges written as "a b" strings or ["a", "b"] pairs.
func (mj *modelJSON) scanMerges(s *jsonScanner) error {
	if s.peek() != '[' { // null
		_, err := s.skip()
		return err
	}
	// Guess the sizes from the bytes left, to spare the copies of growth:
	// pretty-printed merges take about 40 bytes each, half of them text.
	left := len(s.b) - s.pos
	mj.merges = make([]byte, 0, left/2)
	mj.mergeEnds = make([]uint32, 0, left/20)
	var buf []byte
	count := 0
	err := s.array(func() error {
		count++
		var err error
		if s.peek() == '[' {
			s.pos++
			if mj.merges, err = s.str(mj.merges); err != nil {
				return err
			}
			aEnd := len(mj.merges)
			if err = s.expect(','); err != nil {
				return err
			}
			if mj.merges, err = s.str(mj.merges); err != nil {
				return err
			}
			mj.mergeEnds = append(mj.mergeEnds, uint32(aEnd), uint32(len(mj.merges)))
			return s.expect(']')
		}
		if buf, err = s.str(buf[:0]); err != nil {
			return err
		}
		if bytes.HasPrefix(buf, []byte("#version")) {
			return nil
		}
		sp := bytes.IndexByte(buf, ' ')
		if sp < 0 || bytes.IndexByte(buf[sp+1:], ' ') >= 0 {
			return fmt.Errorf("merge %d: %q is not two tokens separated by a space", count, buf)
		}
		mj.merges = append(mj.merges, buf[:sp]...)
		aEnd := len(mj.merges)
		mj.merges = append(mj.merges, buf[sp+1:]...)
		mj.mergeEnds = append(mj.mergeEnds, uint32(aEnd), uint32(len(mj.merges)))
		return nil
	})
	if err == nil && len(mj.merges) > 1<<32-1 {
		err = fmt.Errorf("merges too large")
	}
	return err
}

// build makes the BPE model into t.model and returns the vocabulary as
// written (token → id), which added tokens are resolved against.
func (mj *modelJSON) build(t *Tokenizer, byteLevelWords bool) (*strTable, error) {
	f := mj.fields
	if f.Type != "BPE" {
		return nil, unsupported("model", f.Type, "BPE")
	}
	if f.Dropout != nil && *f.Dropout > 0 {
		return nil, fmt.Errorf("%w: BPE dropout %v (encoding would be random)", ErrUnsupported, *f.Dropout)
	}
	if !mj.hasVocab {
		return nil, fmt.Errorf("vocab: missing")
	}
	m := &bpe{unk: -1, byteFallback: f.ByteFallback, fuseUnk: f.FuseUnk, ignoreMerges: f.IgnoreMerges}
	if p := f.ContinuingSubwordPrefix; p != nil && *p != "" {
		m.prefix = p
	}
	if p := f.EndOfWordSuffix; p != nil && *p != "" {
		m.suffix = p
	}
	if byteLevelWords && (m.prefix != nil || m.suffix != nil) {
		return nil, fmt.Errorf("%w: byte-level BPE with continuing_subword_prefix or end_of_word_suffix", ErrUnsupported)
	}
	ids := mj.vocabIDs
	if int(mj.maxID) > maxTokenID(len(ids)) {
		return nil, fmt.Errorf("vocab: token id %d is far beyond the %d tokens", mj.maxID, len(ids))
	}
	vocab := newStrTable(string(mj.vocab), mj.vocabEnds, ids)
	m.tokens = make([]string, mj.maxID+1)
	for e := range ids {
		m.tokens[ids[e]] = vocab.key(uint32(e))
	}
	if err := mj.resolveMerges(m, vocab); err != nil {
		return nil, fmt.Errorf("merges: %w", err)
	}
	if f.UnkToken != nil {
		id, ok := vocab.get(*f.UnkToken)
		if !ok {
			return nil, fmt.Errorf("unk_token %q is not in the vocabulary", *f.UnkToken)
		}
		m.unk = id
	}
	for b := range m.fallbackIDs {
		m.fallbackIDs[b] = -1
		if id, ok := vocab.get(fmt.Sprintf("<0x%02X>", b)); ok {
			m.fallbackIDs[b] = id
		}
	}
	m.vocab = vocab
	if byteLevelWords {
		m.byteLevel = true
		m.vocab = rawVocab(m, vocab)
	}
	t.model = m
	t.maxID = max(t.maxID, mj.maxID)
	return vocab, nil
}

// maxTokenID is the largest id a tokenizer.json may give one of n tokens.
// Real files number their tokens densely (the added tokens follow the
// vocabulary); tables indexed by id are as long as the largest, and a small
// file must not be able to make them gigabytes long.
func maxTokenID(n int) int { return 2*n + 1<<20 }

// resolveMerges looks up the ids of every merge's parts and result, in
// batches on all cores, and fills m.merges; the rank is the position in the
// list (a repeated pair keeps its last rank, as in the reference's HashMap).
func (mj *modelJSON) resolveMerges(m *bpe, vocab *strTable) error {
	ends := mj.mergeEnds
	n := len(ends) / 2
	vals := make([]uint64, 2*n) // per merge: pairKey, merged id
	prefixLen := 0
	if m.prefix != nil {
		prefixLen = len(*m.prefix)
	}
	part := func(i, k int) string { // k = 0: first part, 1: second
		start := uint32(0)
		if j := 2*i + k - 1; j >= 0 {
			start = ends[j]
		}
		b := mj.merges[start:ends[2*i+k]]
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	const perBatch = batchSize / 3
	workers := min(runtime.GOMAXPROCS(0), 1+n/20000)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var keys [batchSize]string
			var ids [batchSize]int32
			var ab []byte
			for lo, hi := w*n/workers, (w+1)*n/workers; lo < hi; lo += perBatch {
				cnt := min(perBatch, hi-lo)
				ab = ab[:0]
				for j := range cnt {
					a, b := part(lo+j, 0), part(lo+j, 1)
					if prefixLen > len(b) {
						errs[w] = errMergeToken(lo+j, b)
						return
					}
					ab = append(append(ab, a...), b[prefixLen:]...)
				}
				off := 0
				for j := range cnt {
					a, b := part(lo+j, 0), part(lo+j, 1)
					l := len(a) + len(b) - prefixLen
					keys[3*j], keys[3*j+1] = a, b
					keys[3*j+2] = unsafe.String(unsafe.SliceData(ab[off:]), l)
					off += l
				}
				vocab.getBatch(keys[:3*cnt], ids[:3*cnt])
				for j := range cnt {
					for k := range 3 {
						if ids[3*j+k] < 0 {
							errs[w] = errMergeToken(lo+j, keys[3*j+k])
							return
						}
					}
					vals[2*(lo+j)], vals[2*(lo+j)+1] = pairKey(ids[3*j], ids[3*j+1]), uint64(uint32(ids[3*j+2]))
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	m.merges = newPairTable(n)
	for i := range n {
		m.merges.put(vals[2*i], uint64(i)<<32|vals[2*i+1])
	}
	return nil
}

// rawVocab re-keys a byte-level vocabulary by the raw bytes each token
// stands for. Tokens with characters outside the byte alphabet can never
// match a byte-level word; they go to m.unmapped, for TokenID only.
func rawVocab(m *bpe, vocab *strTable) *strTable {
	for b := range m.byteIDs {
		m.byteIDs[b] = -1
	}
	var keys []byte
	var ends []uint32
	var ids []int32
	for e := range vocab.len() {
		tok, id := vocab.key(uint32(e)), vocab.meta[e].id
		var ok bool
		n := len(keys)
		if keys, ok = unByteLevel(keys, tok); !ok {
			if m.unmapped == nil {
				m.unmapped = map[string]int32{}
			}
			m.unmapped[tok] = id
			continue
		}
		if len(keys)-n == 1 {
			m.byteIDs[keys[n]] = id
		}
		ends = append(ends, uint32(len(keys)))
		ids = append(ids, id)
	}
	return newStrTable(string(keys), ends, ids)
}
