package nn

import (
	"fmt"

	"hearth/engine/cache"
	"hearth/engine/tensor"
)

// Attend writes k and v ([n, kvHeads, headDim]) into the caches and
// returns the attention of q ([n, heads, headDim]) over what they hold,
// [n, heads, headDim]. kvs holds one cache, taking every row (one
// sequence's new tokens), or one per row (a batched step of n sequences,
// family.BatchModel): each row then attends to its own sequence alone,
// and the rows' outputs are spliced back together in order.
func Attend(g *tensor.Graph, q, k, v tensor.T, kvs []cache.Layer, spec tensor.AttnSpec) (tensor.T, error) {
	views, err := UpdateRows(g, k, v, kvs)
	if err != nil {
		return tensor.T{}, err
	}
	return AttendViews(g, q, views, spec)
}

// UpdateRows writes k and v into kvs (one cache for every row, or one per
// row, as Attend) and returns what each cache's attention reads. A
// family whose layers share another layer's cache keeps the views for
// them (AttendViews).
func UpdateRows(g *tensor.Graph, k, v tensor.T, kvs []cache.Layer) ([]cache.View, error) {
	if len(kvs) == 1 {
		view, err := kvs[0].Update(g, k, v)
		return []cache.View{view}, err
	}
	if n := g.Shape(k)[0]; len(kvs) != n {
		return nil, fmt.Errorf("attend: %d caches for %d rows", len(kvs), n)
	}
	views := make([]cache.View, len(kvs))
	for i, kv := range kvs {
		var err error
		if views[i], err = kv.Update(g, g.Slice(k, 0, i, i+1), g.Slice(v, 0, i, i+1)); err != nil {
			// the caller trims what was recorded, as for any failed pass
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
	}
	return views, nil
}

// AttendViews is the attention of q's rows over views: one view for
// every row, or one per row, each row then attending to its own.
func AttendViews(g *tensor.Graph, q tensor.T, views []cache.View, spec tensor.AttnSpec) (tensor.T, error) {
	if len(views) == 1 {
		return g.Attention(q, views[0].K, views[0].V, views[0].Spec(spec)), nil
	}
	qs := g.Shape(q)
	n := qs[0]
	if len(views) != n || len(spec.Spans) > 0 {
		return tensor.T{}, fmt.Errorf("attend: %d views for %d rows (spans %d)", len(views), n, len(spec.Spans))
	}
	rows := make([]tensor.T, n)
	for i, view := range views {
		rows[i] = g.Attention(g.Slice(q, 0, i, i+1), view.K, view.V, view.Spec(spec))
	}
	return StackRows(g, q, rows), nil
}

// StackRows puts rows[i] ([1, ...]) at row i of a tensor shaped like like
// ([len(rows), ...], whose rows all get replaced): how the per-row
// results of a batched step (each row's own cache or state) are put back
// together, with the Splice op every backend has.
func StackRows(g *tensor.Graph, like tensor.T, rows []tensor.T) tensor.T {
	ls := g.Shape(like)
	n, width := ls[0], tensor.Elements(ls)/max(ls[0], 1)
	out := g.Reshape(like, n, width)
	for i, r := range rows {
		out = g.Splice(out, g.Reshape(r, 1, width), g.InputInts(onlyRow(i, n), n))
	}
	return g.Reshape(out, ls...)
}

// RotateRows applies r to x ([n, heads, headDim]) at positions pos. ends
// holds one entry, the end of the pass (every row one sequence's), or one
// per row (a batched step, each row one token at ends[i]-1). The table is
// the one each sequence would take alone (Rope.Table): where rows differ
// (LongRoPE, a row past its switch), they are rotated one by one.
func RotateRows(g *tensor.Graph, x, pos tensor.T, r *Rope, ends []int) tensor.T {
	t := r.Table(ends[0])
	same := true
	for _, e := range ends[1:] {
		same = same && r.Table(e) == t
	}
	if same {
		return g.RoPE(x, pos, t)
	}
	rows := make([]tensor.T, len(ends))
	for i, e := range ends {
		rows[i] = g.RoPE(g.Slice(x, 0, i, i+1), g.InputInts([]int32{int32(e - 1)}, 1), r.Table(e))
	}
	return StackRows(g, x, rows)
}

// onlyRow is a Splice row map that takes src's row 0 at row i of n.
func onlyRow(i, n int) []int32 {
	from := make([]int32, n)
	for r := range from {
		from[r] = -1
	}
	from[i] = 0
	return from
}
