{{define "argmaxcommon"}}
// The parameters and the values X (as bits) of both passes.
struct Params {
	rows: u32, cols: u32, parts: u32, chunk: u32,
	off: u32, pad0: u32, pad1: u32, pad2: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<u32>;

// key maps a float's bits to a u32 whose unsigned order is the float
// order, with -0 equal to +0 and NaN below -Inf (key 0), so NaN never wins
// against a number. The values are read as bits: no float compare, which
// a compiler may assume NaN-free.
fn key(b0: u32) -> u32 {
	if ((b0 & 0x7fffffffu) > 0x7f800000u) {
		return 0u;
	}
	var b = b0;
	if (b == 0x80000000u) {
		b = 0u;
	}
	return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

var<workgroup> wk: array<u32, 256>;
var<workgroup> wi: array<u32, 256>;

// best reduces the workgroup's (key, index) pairs to the largest key, the
// lowest index among equal keys.
fn best(li: u32, k: u32, i: u32) -> vec2<u32> {
	wk[li] = k;
	wi[li] = i;
	workgroupBarrier();
	for (var s = 128u; s > 0u; s >>= 1u) {
		if (li < s) {
			let ok = wk[li + s];
			let oi = wi[li + s];
			if (ok > wk[li] || (ok == wk[li] && oi < wi[li])) {
				wk[li] = ok;
				wi[li] = oi;
			}
		}
		workgroupBarrier();
	}
	return vec2<u32>(wk[0], wi[0]);
}
{{end}}

{{define "argmax"}}
// argmax, pass 1: workgroup (row, part) scans elements [part·chunk,
// (part+1)·chunk) of its row, 256 invocations on neighbouring words, and
// writes the part's best (key, index) to W, or, when a row is one part
// ({{.Final}}), the row's index to O straight away.
{{if .Final}}@group(0) @binding(2) var<storage, read_write> O: array<f32>;
{{else}}@group(0) @binding(2) var<storage, read_write> W: array<vec2<u32>>;
{{end}}{{template "argmaxcommon"}}
{{template "grid"}}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let w = wgIndex(wid, nwg);
	if (w >= P.rows * P.parts) {
		return; // uniform per workgroup: the barriers below are safe
	}
	let row = w / P.parts;
	let lo = (w % P.parts) * P.chunk;
	let hi = min(lo + P.chunk, P.cols);
	let base = row * P.cols;
	var bk = 0u;
	var bi = 0xffffffffu;
	for (var c = lo + li; c < hi; c += 256u) {
		let k = key(X[base + c]);
		if (k > bk || (k == bk && c < bi)) {
			bk = k;
			bi = c;
		}
	}
	let r = best(li, bk, bi);
	if (li == 0u) {
{{if .Final}}		// a row that starts with NaN gives 0, as the host sampler does
		var i = r.y;
		if (key(X[base]) == 0u) {
			i = 0u;
		}
		O[P.off + row] = f32(i);
{{else}}		W[w] = r;
{{end}}	}
}
{{end}}

{{define "argmaxrows"}}
// argmax, pass 2: one workgroup per row reduces the row's parts (at most
// 256) and writes the index.
@group(0) @binding(2) var<storage, read> W: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> O: array<f32>;
{{template "argmaxcommon"}}
{{template "grid"}}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let row = wgIndex(wid, nwg);
	if (row >= P.rows) {
		return;
	}
	var p = vec2<u32>(0u, 0xffffffffu);
	if (li < P.parts) {
		p = W[row * P.parts + li];
	}
	let r = best(li, p.x, p.y);
	if (li == 0u) {
		// a row that starts with NaN gives 0, as the host sampler does
		var i = r.y;
		if (key(X[row * P.cols]) == 0u) {
			i = 0u;
		}
		O[P.off + row] = f32(i);
	}
}
{{end}}
