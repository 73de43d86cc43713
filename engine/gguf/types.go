package gguf

import (
	"fmt"
	"strings"
)

// GGMLType is a tensor's storage type (ggml_type).
type GGMLType uint32

// The ggml types Hearth knows by name; block reports which it reads.
const (
	F32  GGMLType = 0
	F16  GGMLType = 1
	Q4_0 GGMLType = 2
	Q4_1 GGMLType = 3
	Q5_0 GGMLType = 6
	Q5_1 GGMLType = 7
	Q8_0 GGMLType = 8
	Q8_1 GGMLType = 9
	Q2_K GGMLType = 10
	Q3_K GGMLType = 11
	Q4_K GGMLType = 12
	Q5_K GGMLType = 13
	Q6_K GGMLType = 14
	Q8_K GGMLType = 15
	I8   GGMLType = 24
	I16  GGMLType = 25
	I32  GGMLType = 26
	I64  GGMLType = 27
	F64  GGMLType = 28
	BF16 GGMLType = 30
)

// blockType is a type's block: elems values stored in bytes bytes
// (ggml's type traits: blck_size and type_size).
type blockType struct {
	name  string
	elems int
	bytes int
}

// qkK is the super-block length of the k-quants (QK_K).
const qkK = 256

var blocks = map[GGMLType]blockType{
	F32:  {"F32", 1, 4},
	F16:  {"F16", 1, 2},
	BF16: {"BF16", 1, 2},
	F64:  {"F64", 1, 8},
	I8:   {"I8", 1, 1},
	I16:  {"I16", 1, 2},
	I32:  {"I32", 1, 4},
	I64:  {"I64", 1, 8},
	Q4_0: {"Q4_0", 32, 2 + 16},
	Q4_1: {"Q4_1", 32, 2 + 2 + 16},
	Q5_0: {"Q5_0", 32, 2 + 4 + 16},
	Q5_1: {"Q5_1", 32, 2 + 2 + 4 + 16},
	Q8_0: {"Q8_0", 32, 2 + 32},
	Q8_1: {"Q8_1", 32, 2 + 2 + 32},
	Q2_K: {"Q2_K", qkK, qkK/16 + qkK/4 + 2 + 2},
	Q3_K: {"Q3_K", qkK, qkK/8 + qkK/4 + 12 + 2},
	Q4_K: {"Q4_K", qkK, 2 + 2 + 12 + qkK/2},
	Q5_K: {"Q5_K", qkK, 2 + 2 + 12 + qkK/8 + qkK/2},
	Q6_K: {"Q6_K", qkK, qkK/2 + qkK/4 + qkK/16 + 2},
	Q8_K: {"Q8_K", qkK, 4 + qkK + qkK/16*2},
}

func (t GGMLType) block() (blockType, bool) {
	b, ok := blocks[t]
	return b, ok
}

func (t GGMLType) String() string {
	if b, ok := blocks[t]; ok {
		return b.name
	}
	return fmt.Sprintf("ggml type %d", uint32(t))
}

// BlockElems and BlockBytes are the type's block size in values and bytes.
func (t GGMLType) BlockElems() int { return blocks[t].elems }

// BlockBytes is the byte size of one block of t.
func (t GGMLType) BlockBytes() int { return blocks[t].bytes }

func supportedTypes() string {
	var names []string
	for _, t := range []GGMLType{F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K} {
		names = append(names, t.String())
	}
	return strings.Join(names, ", ")
}
