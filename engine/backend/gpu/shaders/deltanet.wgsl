{{define "causalconv"}}
// causalconv: the depthwise causal convolution of channels [row0,
// row0+rows) of x [n, c] with taps w [c, k] (this dispatch's block of
// them), continuing from state S [k-1, c]; invocations past the n output
// rows write the next state, the last k-1 rows of [S; x], into N.
struct Params {
	n: u32, c: u32, k: u32, off: u32,
	row0: u32, rows: u32, pad0: u32, pad1: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> S: array<f32>;
@group(0) @binding(3) var<storage, read_write> O: array<f32>;
@group(0) @binding(4) var<storage, read_write> N: array<f32>;
{{.Acc}}
{{template "grid"}}

fn xs(r: u32, ch: u32) -> f32 {
	if (r < P.k - 1u) {
		return S[r * P.c + ch];
	}
	return X[(r - (P.k - 1u)) * P.c + ch];
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let i = wgIndex(wid, nwg) * 256u + li;
	if (i >= (P.n + P.k - 1u) * P.rows) {
		return;
	}
	let r = i / P.rows;
	let ch = P.row0 + i % P.rows;
	if (r < P.n) {
		var acc = 0.0;
		for (var j = 0u; j < P.k; j++) {
			acc += w_get(ch - P.row0, j) * xs(r + j, ch);
		}
		O[P.off + r * P.c + ch] = acc;
		return;
	}
	let rr = r - P.n;
	N[rr * P.c + ch] = xs(P.n + rr, ch);
}
{{end}}

{{define "deltarule"}}
// deltarule: the gated delta rule. One invocation owns column j of one
// value head's state [DK, dv] (in registers) and scans the n tokens in
// order; the workgroup (64 columns of one head) stages each token's query
// and key, and every invocation normalises them itself.
const DK: u32 = {{.DK}}u;
struct Params {
	n: u32, hk: u32, hv: u32, dv: u32,
	off: u32, scale: f32, eps: f32, wgPerHead: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> Q: array<f32>;
@group(0) @binding(2) var<storage, read> K: array<f32>;
@group(0) @binding(3) var<storage, read> V: array<f32>;
@group(0) @binding(4) var<storage, read> G: array<f32>;
@group(0) @binding(5) var<storage, read> B: array<f32>;
@group(0) @binding(6) var<storage, read> S: array<f32>;
@group(0) @binding(7) var<storage, read_write> O: array<f32>;
@group(0) @binding(8) var<storage, read_write> N: array<f32>;
var<workgroup> qs: array<f32, DK>;
var<workgroup> ks: array<f32, DK>;
var<private> st: array<f32, DK>;
{{template "grid"}}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let wg = wgIndex(wid, nwg);
	let h = wg / P.wgPerHead;
	let j = (wg % P.wgPerHead) * 64u + li;
	let live = h < P.hv && j < P.dv;
	let hh = min(h, P.hv - 1u);
	let kh = hh / (P.hv / P.hk);
	let dv = P.dv;
	if (live) {
		for (var i = 0u; i < DK; i++) {
			st[i] = S[(hh * DK + i) * dv + j];
		}
	}
	for (var t = 0u; t < P.n; t++) {
		workgroupBarrier();
		let base = (t * P.hk + kh) * DK;
		for (var i = li; i < DK; i += 64u) {
			qs[i] = Q[base + i];
			ks[i] = K[base + i];
		}
		workgroupBarrier();
		if (live) {
			scan(t, hh, j);
		}
	}
	if (live) {
		for (var i = 0u; i < DK; i++) {
			N[(hh * DK + i) * dv + j] = st[i];
		}
	}
}

fn scan(t: u32, hh: u32, j: u32) {
	let dv = P.dv;
	var sq = 0.0;
	var sk = 0.0;
	for (var i = 0u; i < DK; i++) {
		sq += qs[i] * qs[i];
		sk += ks[i] * ks[i];
	}
	let iq = 1.0 / sqrt(sq + P.eps);
	let ik = 1.0 / sqrt(sk + P.eps);
	let d = exp(G[t * P.hv + hh]);
	var mem = 0.0;
	for (var i = 0u; i < DK; i++) {
		st[i] = st[i] * d;
		mem += st[i] * (ks[i] * ik);
	}
	let delta = (V[(t * P.hv + hh) * dv + j] - mem) * B[t * P.hv + hh];
	var y = 0.0;
	for (var i = 0u; i < DK; i++) {
		st[i] += (ks[i] * ik) * delta;
		y += st[i] * ((qs[i] * iq) * P.scale);
	}
	O[P.off + (t * P.hv + hh) * dv + j] = y;
}
{{end}}
