{{define "attention"}}
// attention: one workgroup per (key split, query, head). Keys are scored a
// tile of 128 at a time with an online softmax (running max m and sum l);
// with one split the result goes straight to O, otherwise each split writes
// (m, l, acc[D]) for the combine kernel.
struct Params {
	nq: u32, hq: u32, hkv: u32, qpos: u32,
	keylen: u32, window: u32, ring: u32, bidir: u32,
	scale: f32, softcap: f32, splits: u32, off: u32,
	pad0: u32, pad1: u32, pad2: u32, pad3: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> Q: array<f32>;
@group(0) @binding(2) var<storage, read> Kc: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> Vc: array<f32>;
@group(0) @binding(4) var<storage, read_write> O: array<f32>;
{{if .Split}}@group(0) @binding(5) var<storage, read_write> Part: array<f32>;
{{end}}const D: u32 = {{.D}}u;
const D4: u32 = {{div .D 4}}u;
const NONE: f32 = -3.0e38;
var<workgroup> qs: array<vec4<f32>, {{div .D 4}}>;
var<workgroup> sc: array<f32, 128>;
var<workgroup> red: array<f32, 128>;
{{template "grid"}}
{{template "math"}}

fn keyRow(p: u32) -> u32 {
	if (P.ring > 0u) {
		return p % P.ring;
	}
	return p;
}

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let wg = wgIndex(wid, nwg);
	if (wg >= P.nq * P.hq * P.splits) {
		return;
	}
	let h = wg % P.hq;
	let i = (wg / P.hq) % P.nq;
	let s = wg / (P.hq * P.nq);
	let qp = P.qpos + i;
	var lo = 0u;
	var hi = P.keylen;
	if (P.bidir == 0u) {
		hi = qp + 1u;
		if (P.window > 0u && qp + 1u > P.window) {
			lo = qp + 1u - P.window;
		}
	}
	let span = (hi - lo + P.splits - 1u) / P.splits;
	let a = lo + s * span;
	let b = min(hi, a + span);
	let kvh = h / (P.hq / P.hkv);
	let qb = (i * P.hq + h) * D;
	for (var j = li; j < D4; j += 128u) {
		qs[j] = vec4<f32>(Q[qb + 4u * j], Q[qb + 4u * j + 1u], Q[qb + 4u * j + 2u], Q[qb + 4u * j + 3u]);
	}
	workgroupBarrier();
	var m = NONE;
	var l = 0.0;
{{range $u := seq .DU}}	var acc{{$u}} = 0.0;
{{end}}
	for (var t0 = a; t0 < b; t0 += 128u) {
		let p = t0 + li;
		var score = NONE;
		if (p < b) {
			let kb = (keyRow(p) * P.hkv + kvh) * D4;
			var d = 0.0;
			for (var j = 0u; j < D4; j++) {
				d += dot(qs[j], Kc[kb + j]);
			}
			d = d * P.scale;
			if (P.softcap > 0.0) {
				d = P.softcap * tanh1(d / P.softcap);
			}
			score = d;
		}
		red[li] = score;
		workgroupBarrier();
		for (var st = 64u; st > 0u; st >>= 1u) {
			if (li < st) {
				red[li] = max(red[li], red[li + st]);
			}
			workgroupBarrier();
		}
		let mn = max(m, red[0]);
		let corr = exp(m - mn);
		var e = 0.0;
		if (p < b) {
			e = exp(score - mn);
		}
		sc[li] = e;
		l = l * corr + e;
		m = mn;
		workgroupBarrier();
		let nt = min(128u, b - t0);
{{range $u := seq .DU}}		acc{{$u}} *= corr;
{{end}}		for (var tt = 0u; tt < nt; tt++) {
			let vb = (keyRow(t0 + tt) * P.hkv + kvh) * D;
			let w = sc[tt];
{{range $u := seq .DU}}			if (li + {{mul $u 128}}u < D) {
				acc{{$u}} += w * Vc[vb + li + {{mul $u 128}}u];
			}
{{end}}		}
		workgroupBarrier();
	}
	red[li] = l;
	workgroupBarrier();
	for (var st = 64u; st > 0u; st >>= 1u) {
		if (li < st) {
			red[li] += red[li + st];
		}
		workgroupBarrier();
	}
	let total = red[0];
	if (P.splits == 1u) {
		let ob = P.off + (i * P.hq + h) * D;
{{range $u := seq .DU}}		if (li + {{mul $u 128}}u < D) {
			O[ob + li + {{mul $u 128}}u] = acc{{$u}} / total;
		}
{{end}}		return;
	}
{{if .Split}}	let pb = ((s * P.nq + i) * P.hq + h) * (D + 2u);
	if (li == 0u) {
		Part[pb] = m;
		Part[pb + 1u] = total;
	}
{{range $u := seq .DU}}	if (li + {{mul $u 128}}u < D) {
		Part[pb + 2u + li + {{mul $u 128}}u] = acc{{$u}};
	}
{{end}}{{end}}}
{{end}}

{{define "combine"}}
// combine merges the per-split partial softmaxes of attention.
struct Params {
	nq: u32, hq: u32, splits: u32, off: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> Part: array<f32>;
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
const D: u32 = {{.D}}u;
{{template "grid"}}

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let wg = wgIndex(wid, nwg);
	if (wg >= P.nq * P.hq || P.splits == 1u) {
		return;
	}
	let stride = P.nq * P.hq * (D + 2u);
	var mx = -3.0e38;
	for (var s = 0u; s < P.splits; s++) {
		mx = max(mx, Part[s * stride + wg * (D + 2u)]);
	}
	var total = 0.0;
	for (var s = 0u; s < P.splits; s++) {
		let pb = s * stride + wg * (D + 2u);
		total += Part[pb + 1u] * exp(Part[pb] - mx);
	}
	for (var j = li; j < D; j += 128u) {
		var v = 0.0;
		for (var s = 0u; s < P.splits; s++) {
			let pb = s * stride + wg * (D + 2u);
			v += Part[pb + 2u + j] * exp(Part[pb] - mx);
		}
		O[P.off + wg * D + j] = v / total;
	}
}
{{end}}
