package gpu

import (
	"hearth/engine/tensor"
)

// argmaxChunk is the fewest elements one workgroup of the first Argmax
// pass scans: 4 per invocation, so a 128k vocabulary row spreads over
// about 125 workgroups, enough to fill a large GPU.
const argmaxChunk = 1024

// argmaxParts is how many workgroups share a row of cols values, and how
// many values each takes; the second pass reduces at most 256 parts.
func argmaxParts(cols int) (parts, chunk int) {
	chunk = max(argmaxChunk, (cols+255)/256)
	chunk = (chunk + 255) &^ 255
	return (cols + chunk - 1) / chunk, chunk
}

// argmax emits the two-pass row argmax: many workgroups per row write
// partial (key, index) pairs, then one workgroup per row picks among them.
// A row one workgroup covers takes the first pass alone.
func (c *compiler) argmax(i int) error {
	g := c.g
	nd := &g.Nodes[i]
	x, err := c.f32(nd.In[0])
	if err != nil {
		return err
	}
	rows, cols := nd.Shape[0], g.Shape(nd.In[0])[1]
	parts, chunk := argmaxParts(cols)
	out, off := c.out(i)
	params := func(g *tensor.Graph, p *[16]uint32) {
		p[0], p[1], p[2], p[3], p[4] = uint32(rows), uint32(cols), uint32(parts), uint32(chunk), off(g)
	}
	if parts == 1 {
		c.add(kspec{label: "Argmax", src: source("argmax", map[string]any{"Final": true}), ops: []operand{x, out},
			params: params, grid: grid1(rows, 1)})
		return nil
	}
	// the partial pairs are a value of their own, like attention's splits
	part := operand{kind: opSlot, node: len(g.Nodes) + i, size: (uint64(rows*parts)*8 + 15) &^ 15, write: true}
	c.add(kspec{label: "Argmax parts", src: source("argmax", map[string]any{"Final": false}), ops: []operand{x, part},
		params: params, grid: grid1(rows*parts, 1)})
	part.write = false
	c.add(kspec{label: "Argmax", src: source("argmaxrows", nil), ops: []operand{x, part, out},
		params: params, grid: grid1(rows, 1)})
	return nil
}
