{{define "splice"}}
// splice: row r of O is row F[r] of S, or row r of X when F[r] is none
// (0xffffffff).
struct Params {
	n: u32, d: u32, off: u32, pad: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> S: array<f32>;
@group(0) @binding(3) var<storage, read> F: array<u32>;
@group(0) @binding(4) var<storage, read_write> O: array<f32>;
{{template "grid"}}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let i = wgIndex(wid, nwg) * 256u + li;
	if (i >= P.n * P.d) {
		return;
	}
	let r = i / P.d;
	let c = i % P.d;
	let f = F[r];
	if (f == 0xffffffffu) {
		O[P.off + i] = X[i];
	} else {
		O[P.off + i] = S[f * P.d + c];
	}
}
{{end}}

{{define "avgpool2d"}}
// avgpool2d: each output element is the float32 sum of its k×k block of
// the w-wide grid of rows, in row-major order, divided by k².
struct Params {
	n: u32, c: u32, w: u32, k: u32,
	off: u32, pad0: u32, pad1: u32, pad2: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
{{template "grid"}}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let i = wgIndex(wid, nwg) * 256u + li;
	if (i >= P.n * P.c) {
		return;
	}
	let o = i / P.c;
	let j = i % P.c;
	let ow = P.w / P.k;
	let oy = o / ow;
	let ox = o % ow;
	var s = 0.0;
	for (var dy = 0u; dy < P.k; dy++) {
		for (var dx = 0u; dx < P.k; dx++) {
			let r = (oy * P.k + dy) * P.w + ox * P.k + dx;
			s += X[r * P.c + j];
		}
	}
	O[P.off + i] = s / f32(P.k * P.k);
}
{{end}}

{{define "relattention"}}
// relattention: tensor.RelAttention, one invocation per output element
// (query, head, channel). Each recomputes its query's scores (the content
// and position dot products, added, then the soft cap): a first pass for
// their maximum, a second for the softmax sum and the weighted values.
// The windows are short (Gemma 4's audio tower: 12 keys), so the repeated
// dot products cost less than a barrier-synchronized workgroup would save.
struct Params {
	n: u32, h: u32, d: u32, p: u32,
	left: u32, right: u32, softcap: f32, off: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> Q: array<f32>;
@group(0) @binding(2) var<storage, read> K: array<f32>;
@group(0) @binding(3) var<storage, read> V: array<f32>;
@group(0) @binding(4) var<storage, read> R: array<f32>;
@group(0) @binding(5) var<storage, read_write> O: array<f32>;
{{template "grid"}}
{{template "math"}}

fn score(qb: u32, i: u32, j: u32, hh: u32) -> f32 {
	let kb = (j * P.h + hh) * P.d;
	var ac = 0.0;
	for (var e = 0u; e < P.d; e++) {
		ac += Q[qb + e] * K[kb + e];
	}
	var bd = 0.0;
	let r = P.left - (i - j); // used only for j ≤ i, where i - j < left: r ≥ 1
	if (j <= i && r < P.p) {
		let rb = (r * P.h + hh) * P.d;
		for (var e = 0u; e < P.d; e++) {
			bd += Q[qb + e] * R[rb + e];
		}
	} else if (j > i && P.left + (j - i) < P.p) {
		let rb = ((P.left + (j - i)) * P.h + hh) * P.d;
		for (var e = 0u; e < P.d; e++) {
			bd += Q[qb + e] * R[rb + e];
		}
	}
	var s = ac + bd;
	if (P.softcap > 0.0) {
		s = P.softcap * tanh1(s / P.softcap);
	}
	return s;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let idx = wgIndex(wid, nwg) * 256u + li;
	if (idx >= P.n * P.h * P.d) {
		return;
	}
	let e = idx % P.d;
	let hh = (idx / P.d) % P.h;
	let i = idx / (P.d * P.h);
	let qb = (i * P.h + hh) * P.d;
	var lo = 0u;
	if (i + 1u > P.left) {
		lo = i + 1u - P.left;
	}
	var hi = i;
	if (P.right > 1u) {
		hi = min(P.n - 1u, i + P.right - 1u);
	}
	var m = -3.4028234e38;
	for (var j = lo; j <= hi; j++) {
		m = max(m, score(qb, i, j, hh));
	}
	var sum = 0.0;
	var acc = 0.0;
	for (var j = lo; j <= hi; j++) {
		let w = exp(score(qb, i, j, hh) - m);
		sum += w;
		acc += w * V[(j * P.h + hh) * P.d + e];
	}
	O[P.off + idx] = acc / sum;
}
{{end}}
