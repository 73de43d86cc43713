{{define "unary"}}
// unary: one invocation per element.
struct Params {
	n: u32, off: u32, c: f32, d: f32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
{{template "grid"}}
{{template "math"}}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let i = wgIndex(wid, nwg) * 256u + li;
	if (i >= P.n) {
		return;
	}
	let x = X[i];
	O[P.off + i] = {{.Expr}};
}
{{end}}

{{define "binary"}}
// binary: a op b, b repeating over a's leading axes.
struct Params {
	n: u32, nb: u32, off: u32, pad: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> A: array<f32>;
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
{{.Acc}}
{{template "grid"}}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let i = wgIndex(wid, nwg) * 256u + li;
	if (i >= P.n) {
		return;
	}
	O[P.off + i] = A[i] {{.Op}} bv_get(0u, i % P.nb);
}
{{end}}

{{define "rope"}}
// rope rotates pairs (j, j + dims/2), or (2j, 2j+1) when traditional, of
// the first dims of each head by the host-computed (cos, sin) of its token.
// With Two it also rotates a second tensor of heads1 heads (the same
// tokens, head size and table: a layer's q and k) after the first.
struct Params {
	n: u32, heads: u32, hd: u32, dims: u32,
	trad: u32, off: u32, heads1: u32, off1: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> CS: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> O: array<f32>;
{{if .Two}}@group(0) @binding(4) var<storage, read> X1: array<f32>;
@group(0) @binding(5) var<storage, read_write> O1: array<f32>;
{{end}}{{template "grid"}}

fn ld(s: u32, k: u32) -> f32 {
{{if .Two}}	if (s == 1u) {
		return X1[k];
	}
{{end}}	return X[k];
}

fn st(s: u32, k: u32, v: f32) {
{{if .Two}}	if (s == 1u) {
		O1[k] = v;
		return;
	}
{{end}}	O[k] = v;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	var i = wgIndex(wid, nwg) * 256u + li;
	var s = 0u;
	var heads = P.heads;
	var off = P.off;
	let n0 = P.n * P.heads * P.hd;
	if (i >= n0) {
		s = 1u;
		i -= n0;
		heads = P.heads1;
		off = P.off1;
	}
	if (i >= P.n * heads * P.hd) {
		return;
	}
	let e = i % P.hd;
	if (e >= P.dims) {
		st(s, off + i, ld(s, i));
		return;
	}
	let t = i / (heads * P.hd);
	let head = i - e;
	let half = P.dims / 2u;
	var j = e % half;
	var first = e < half;
	var partner = e + half;
	if (!first) {
		partner = e - half;
	}
	if (P.trad != 0u) {
		j = e / 2u;
		first = (e & 1u) == 0u;
		partner = e ^ 1u;
	}
	let cs = CS[t * half + j];
	let x = ld(s, i);
	let y = ld(s, head + partner);
	if (first) {
		st(s, off + i, x * cs.x - y * cs.y);
	} else {
		st(s, off + i, x * cs.x + y * cs.y);
	}
}
{{end}}

{{define "copy"}}
// copy: O[off + r*ostride + c] = X[ioff + r*istride + c] (slices, stores).
struct Params {
	rows: u32, cols: u32, istride: u32, ioff: u32,
	off: u32, ostride: u32, pad0: u32, pad1: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
{{template "grid"}}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let i = wgIndex(wid, nwg) * 256u + li;
	if (i >= P.rows * P.cols) {
		return;
	}
	let r = i / P.cols;
	let c = i % P.cols;
	O[P.off + r * P.ostride + c] = X[P.ioff + r * P.istride + c];
}
{{end}}

{{define "embed"}}
// embed gathers rows [row0, row0+rows) of a table block for the ids that
// fall in it (u32 from the host, or float32 values a kernel wrote).
struct Params {
	n: u32, hidden: u32, row0: u32, rows: u32,
	off: u32, pad0: u32, pad1: u32, pad2: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
{{if .FloatIDs}}@group(0) @binding(1) var<storage, read> IDS: array<f32>;{{else}}@group(0) @binding(1) var<storage, read> IDS: array<u32>;{{end}}
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
{{.Acc}}
{{template "grid"}}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let i = wgIndex(wid, nwg) * 256u + li;
	if (i >= P.n * P.hidden) {
		return;
	}
	let t = i / P.hidden;
	let c = i % P.hidden;
	let id = {{if .FloatIDs}}u32(max(IDS[t], 0.0)){{else}}IDS[t]{{end}};
	if (id < P.row0 || id >= P.row0 + P.rows) {
		return;
	}
	O[P.off + i] = w_get(id - P.row0, c);
}
{{end}}
