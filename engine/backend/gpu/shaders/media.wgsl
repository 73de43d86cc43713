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
