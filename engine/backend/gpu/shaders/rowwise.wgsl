{{define "norm"}}
// norm: per row, (x - mean)·inv·(w + shift) + b with inv = 1/sqrt(var + eps);
// RMSNorm has mean 0 and var = mean(x²). One workgroup per row.
struct Params {
	rows: u32, cols: u32, eps: f32, shift: f32,
	off: u32, pad0: u32, pad1: u32, pad2: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
{{.Acc}}
var<workgroup> red: array<f32, 256>;
{{template "grid"}}

fn total(li: u32, v: f32) -> f32 {
	red[li] = v;
	workgroupBarrier();
	for (var s = 128u; s > 0u; s >>= 1u) {
		if (li < s) {
			red[li] += red[li + s];
		}
		workgroupBarrier();
	}
	let t = red[0];
	workgroupBarrier();
	return t;
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let row = wgIndex(wid, nwg);
	if (row >= P.rows) {
		return;
	}
	let base = row * P.cols;
	var mean = 0.0;
{{if .Mean}}	var sum = 0.0;
	for (var c = li; c < P.cols; c += 256u) {
		sum += X[base + c];
	}
	mean = total(li, sum) / f32(P.cols);
{{end}}	var ss = 0.0;
	for (var c = li; c < P.cols; c += 256u) {
		let d = X[base + c] - mean;
		ss += d * d;
	}
	let inv = 1.0 / sqrt(total(li, ss) / f32(P.cols) + P.eps);
	for (var c = li; c < P.cols; c += 256u) {
		var y = (X[base + c] - mean) * inv;
{{if .W}}		y = y * (nw_get(0u, c) + P.shift);
{{end}}{{if .B}}		y = y + nb_get(0u, c);
{{end}}		O[P.off + base + c] = y;
	}
}
{{end}}

{{define "softmax"}}
// softmax over the last axis, max-subtracted. One workgroup per row.
struct Params {
	rows: u32, cols: u32, off: u32, pad: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
var<workgroup> red: array<f32, 256>;
{{template "grid"}}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let row = wgIndex(wid, nwg);
	if (row >= P.rows) {
		return;
	}
	let base = row * P.cols;
	var mx = -3.0e38;
	for (var c = li; c < P.cols; c += 256u) {
		mx = max(mx, X[base + c]);
	}
	red[li] = mx;
	workgroupBarrier();
	for (var s = 128u; s > 0u; s >>= 1u) {
		if (li < s) {
			red[li] = max(red[li], red[li + s]);
		}
		workgroupBarrier();
	}
	mx = red[0];
	workgroupBarrier();
	var sum = 0.0;
	for (var c = li; c < P.cols; c += 256u) {
		sum += exp(X[base + c] - mx);
	}
	red[li] = sum;
	workgroupBarrier();
	for (var s = 128u; s > 0u; s >>= 1u) {
		if (li < s) {
			red[li] += red[li + s];
		}
		workgroupBarrier();
	}
	let inv = 1.0 / red[0];
	for (var c = li; c < P.cols; c += 256u) {
		O[P.off + base + c] = exp(X[base + c] - mx) * inv;
	}
}
{{end}}
