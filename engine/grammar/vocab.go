package grammar

import (
	"bytes"
	"hearth/engine/tokenizer"
	"slices"
)

// Vocab is a tokenizer's tokens as the bytes they add to the text, in a
// byte trie: a mask walk reads each shared prefix once and drops a whole
// subtree at the first byte the grammar refuses.
type Vocab struct {
	bytes  [][]byte
	nodes  []trieNode
	edges  []trieEdge // children of each node, contiguous, sorted by byte
	sorted []int32    // token ids sorted by their bytes: a node's subtree is a run of it
}

type trieNode struct {
	first, count int32 // children: edges[first : first+count]
	lo, hi       int32 // the subtree's tokens: sorted[lo:hi]
	ends         int32 // of which sorted[lo : lo+ends] end at this node
}

type trieEdge struct {
	b    byte
	node int32
}

// Size is the number of token ids (the mask's length in bits).
func (v *Vocab) Size() int { return len(v.bytes) }

// NewVocab builds the trie of tokens[id] (nil or empty: a token the
// grammar never allows, such as a special token).
func NewVocab(tokens [][]byte) *Vocab {
	v := &Vocab{bytes: tokens}
	for id, t := range tokens {
		if len(t) > 0 {
			v.sorted = append(v.sorted, int32(id))
		}
	}
	slices.SortFunc(v.sorted, func(a, b int32) int { return bytes.Compare(tokens[a], tokens[b]) })
	// Breadth-first over the sorted ids: the tokens under a node are a
	// contiguous run, shortest (the node's own) first.
	type span struct {
		node  int32
		depth int
	}
	v.nodes = append(v.nodes, trieNode{lo: 0, hi: int32(len(v.sorted))})
	queue := []span{{0, 0}}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		n := v.nodes[s.node]
		i := int(n.lo)
		for i < int(n.hi) && len(tokens[v.sorted[i]]) == s.depth {
			i++
		}
		n.ends = int32(i) - n.lo
		n.first = int32(len(v.edges))
		for i < int(n.hi) {
			c := tokens[v.sorted[i]][s.depth]
			j := i
			for j < int(n.hi) && tokens[v.sorted[j]][s.depth] == c {
				j++
			}
			child := int32(len(v.nodes))
			v.nodes = append(v.nodes, trieNode{lo: int32(i), hi: int32(j)})
			v.edges = append(v.edges, trieEdge{c, child})
			queue = append(queue, span{child, s.depth + 1})
			i = j
		}
		n.count = int32(len(v.edges)) - n.first
		v.nodes[s.node] = n
	}
	return v
}

// VocabOf is the vocabulary of a tokenizer: each token's bytes mid-text
// (special tokens have none, so no grammar allows them).
func VocabOf(tk *tokenizer.Tokenizer) *Vocab {
	tokens := make([][]byte, tk.VocabSize())
	for id := range tokens {
		if b, ok := tk.TokenBytes(int32(id)); ok {
			tokens[id] = b
		}
	}
	return NewVocab(tokens)
}
