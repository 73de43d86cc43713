package cache

import (
	"errors"
	"fmt"
	"slices"

	"hearth/engine/tensor"
)

// State is the memory of one recurrent layer (Qwen 3.5's Gated DeltaNet):
// a rolling convolution state and a recurrent state, both of a fixed size
// whatever the context. A forward pass reads the state as of its first
// token and writes the state after its last into another slot (the ops
// that update it, tensor.CausalConv1d and tensor.GatedDeltaRule, take both),
// so the states of the last few passes stay intact: Trim back to the
// length one of them was taken at is free. Snapshot pins the current
// state so Rollback can return to it however many passes later. A Trim to
// a length no slot holds cannot be undone: the state is then lost and the
// next Advance fails instead of computing on a wrong state.
//
// docs/design/deltanet-state.md describes the layout and the rules.
type State struct {
	b          tensor.Backend
	convShape  []int
	recShape   []int
	slots      []slot
	cur        int // slot holding the state at length
	length     int
	keep       int  // past passes Trim can undo
	lost       bool // a Trim went past every slot
	lostLength int
}

type slot struct {
	conv, rec tensor.T
	at        int  // tokens the slot's state has seen; -1 when it holds none
	pins      int  // snapshots that hold it
	stale     bool // a pinned state of tokens since trimmed: Rollback only
}

// Step is what one pass's ops read and write: the conv and recurrent
// states before the pass (ConvIn, RecIn) and the buffers that receive them
// after it (ConvOut, RecOut).
type Step struct {
	ConvIn, ConvOut tensor.T
	RecIn, RecOut   tensor.T
}

// NewState allocates a state of conv shape [kernel-1, channels] and
// recurrent shape [heads, dk, dv], zeroed (the state before any token),
// with keep+1 slots so that Trim can undo the last keep passes.
func NewState(b tensor.Backend, convShape, recShape []int, keep int) (*State, error) {
	if keep < 1 {
		return nil, fmt.Errorf("recurrent state: keep %d must be positive", keep)
	}
	s := &State{b: b, convShape: slices.Clone(convShape), recShape: slices.Clone(recShape), keep: keep}
	for range keep + 1 {
		if err := s.grow(); err != nil {
			s.Free()
			return nil, err
		}
	}
	s.slots[0].at = 0
	return s, nil
}

func (s *State) grow() error {
	conv, err := s.b.Alloc(s.convShape)
	if err != nil {
		return err
	}
	rec, err := s.b.Alloc(s.recShape)
	if err != nil {
		s.b.Free(conv)
		return err
	}
	s.slots = append(s.slots, slot{conv: conv, rec: rec, at: -1})
	return nil
}

// ErrStateLost is returned (wrapped) by Advance after a Trim to a length
// whose state no slot held.
var ErrStateLost = errors.New("recurrent state lost")

// Advance records a pass of n tokens: it returns the buffers the pass
// reads and writes, and the length grows at record time. If the graph is
// not run, Trim the n tokens back off (that restores the slot read).
func (s *State) Advance(n int) (Step, error) {
	if s.lost {
		return Step{}, fmt.Errorf("%w: trimmed to %d tokens, past the last %d passes and every snapshot; start a new sequence", ErrStateLost, s.lostLength, s.keep)
	}
	if n <= 0 {
		return Step{}, fmt.Errorf("recurrent state: a pass of %d tokens", n)
	}
	// the destination: a free slot, else the oldest unpinned one
	dst := -1
	for i, sl := range s.slots {
		if i == s.cur || sl.pins > 0 {
			continue
		}
		if dst < 0 || sl.at < s.slots[dst].at {
			dst = i
		}
	}
	if dst < 0 { // every other slot holds a snapshot
		if err := s.grow(); err != nil {
			return Step{}, err
		}
		dst = len(s.slots) - 1
	}
	src := s.slots[s.cur]
	st := Step{ConvIn: src.conv, RecIn: src.rec, ConvOut: s.slots[dst].conv, RecOut: s.slots[dst].rec}
	s.length += n
	s.slots[dst].at, s.slots[dst].stale = s.length, false
	s.cur = dst
	return st, nil
}

// Update is not how a recurrent layer is written: it takes no keys and
// values (the model calls Advance).
func (s *State) Update(g *tensor.Graph, k, v tensor.T) (View, error) {
	return View{}, errors.New("recurrent state: Update takes keys and values; recurrent layers call Advance")
}

// Len is the number of tokens the state has seen.
func (s *State) Len() int { return s.length }

// Trim drops the last n tokens: the state returns to that of the slot
// taken at the new length. With no such slot the state is lost (Advance
// fails) but the length still drops, so the layers of a sequence agree.
func (s *State) Trim(n int) int {
	n = min(max(n, 0), s.length)
	if n == 0 {
		return 0
	}
	target := s.length - n
	s.length = target
	if s.lost {
		s.lostLength = target
		return n
	}
	at := -1
	for i, sl := range s.slots {
		if sl.at == target && !sl.stale {
			at = i
			break
		}
	}
	if at < 0 {
		s.lost, s.lostLength = true, target
		return n
	}
	s.cur = at
	s.forgetAfter(target)
	return n
}

// CanTrim reports whether a slot holds the state n tokens back, so Trim(n)
// does not lose it.
func (s *State) CanTrim(n int) bool {
	if n == 0 {
		return !s.lost
	}
	if s.lost || n < 0 || n > s.length {
		return false
	}
	for _, sl := range s.slots {
		if sl.at == s.length-n && !sl.stale {
			return true
		}
	}
	return false
}

// forgetAfter drops the slots holding states past length: they belong to
// tokens no longer in the sequence. A pinned one stays for its snapshot's
// Rollback, but Trim no longer finds it.
func (s *State) forgetAfter(length int) {
	for i := range s.slots {
		sl := &s.slots[i]
		if i == s.cur || sl.at <= length {
			continue
		}
		if sl.pins > 0 {
			sl.stale = true
		} else {
			sl.at = -1
		}
	}
}

// Snap is a snapshot: the state at one length, kept until Release.
type Snap struct {
	slot, at int
	s        *State
}

// Len is the number of tokens the snapshot's state had seen.
func (p Snap) Len() int { return p.at }

// Snapshot pins the current state. It copies nothing: the slot holding it
// is kept out of reuse until Release.
func (s *State) Snapshot() (Snap, error) {
	if s.lost {
		return Snap{}, fmt.Errorf("%w: nothing to snapshot", ErrStateLost)
	}
	s.slots[s.cur].pins++
	return Snap{slot: s.cur, at: s.length, s: s}, nil
}

// Rollback returns the state to the snapshot's: the next pass starts from
// it, at its length. A snapshot taken later than the current length, on
// tokens since trimmed, is the caller's to avoid: Rollback only refuses
// one that is not this state's or was released.
func (s *State) Rollback(p Snap) error {
	if p.s != s || p.slot < 0 || p.slot >= len(s.slots) || s.slots[p.slot].pins == 0 || s.slots[p.slot].at != p.at {
		return errors.New("recurrent state: rollback to a snapshot this state does not hold")
	}
	s.cur, s.length, s.lost = p.slot, p.at, false
	s.slots[p.slot].stale = false
	s.forgetAfter(p.at)
	// the passes before it may be of other tokens: only snapshots stay
	for i := range s.slots {
		if i != s.cur && s.slots[i].pins == 0 {
			s.slots[i].at = -1
		}
	}
	return nil
}

// Release unpins a snapshot's slot.
func (s *State) Release(p Snap) {
	if p.s == s && p.slot >= 0 && p.slot < len(s.slots) && s.slots[p.slot].pins > 0 {
		s.slots[p.slot].pins--
	}
}

// Free releases the buffers.
func (s *State) Free() {
	for _, sl := range s.slots {
		s.b.Free(sl.conv)
		s.b.Free(sl.rec)
	}
	s.slots = nil
}

// Bytes is the float32 memory the state holds (every slot).
func (s *State) Bytes() int64 {
	return int64(len(s.slots)) * 4 * int64(tensor.Elements(s.convShape)+tensor.Elements(s.recShape))
}
