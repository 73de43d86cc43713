{{define "attention"}}
// attention: one workgroup per (key split, query, head). Keys are scored a
// tile of 128 at a time with an online softmax (running max m and sum l);
// with one split the result goes straight to O, otherwise each split writes
// (m, l, acc[D]) to Part, a record of PS floats (D + 2 rounded up to 128
// bytes, so no cache line holds two records), and counts itself done in
// Cnt; the last split of a (query, head) to finish merges the records into
// O (see combine) and zeroes the count for the next dispatch. Values are
// summed by KG groups of TP invocations, each group taking every KG-th key
// of the tile and each invocation DU4 vec4 columns of it, UK keys per
// iteration with their loads issued together; the groups are added in
// workgroup memory at the end. A key's score loads SK vec4s of its row at
// a time and sums them in four lanes (one chain per lane instead of one
// for the whole row).
struct Params {
	nq: u32, hq: u32, hkv: u32, qpos: u32,
	keylen: u32, window: u32, ring: u32, bidir: u32,
	scale: f32, softcap: f32, splits: u32, off: u32,
	kvsoff: u32, pad1: u32, pad2: u32, pad3: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> Q: array<f32>;
{{if or .Q8 .Q4}}@group(0) @binding(2) var<storage, read> Kc: array<u32>;
@group(0) @binding(3) var<storage, read> Vc: array<u32>;
{{else}}@group(0) @binding(2) var<storage, read> Kc: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> Vc: array<vec4<f32>>;
{{end}}@group(0) @binding(4) var<storage, read_write> O: array<f32>;
{{if .Split}}@group(0) @binding(5) var<storage, read_write> Part: array<f32>;
@group(0) @binding(6) var<storage, read_write> Cnt: array<atomic<u32>>;
const PS: u32 = {{.PS}}u;
const MAXS: u32 = {{.MaxSplits}}u;
var<workgroup> done: u32;
var<workgroup> cw: array<f32, {{.MaxSplits}}>;
{{end}}{{if .Spans}}@group(0) @binding({{if .Split}}7{{else}}5{{end}}) var<storage, read> SpanEnd: array<u32>;
{{end}}const D: u32 = {{.D}}u;
const D4: u32 = {{div .D 4}}u;
const TP: u32 = {{.TP}}u;
const KG: u32 = {{.KG}}u;
const NONE: f32 = -3.0e38;
var<workgroup> qs: array<vec4<f32>, {{div .D 4}}>;
var<workgroup> sc: array<f32, 128>;
var<workgroup> red: array<f32, 128>;
var<workgroup> red2: array<f32, 8>;
var<workgroup> vsum: array<vec4<f32>, {{mul 128 .DU4}}>;
{{template "grid"}}
{{template "math"}}

{{if .Q8}}// q8 keys and values (kvquant.go): vec4 f of the codes, four int8 to
// a word, times its group's scale (GV vec4s to a group) after the codes
const GV: u32 = {{.GV}}u;
const G: u32 = {{.G}}u;
fn unq8(w: u32) -> vec4<f32> {
	return vec4<f32>(vec4<i32>(bitcast<i32>(w << 24u) >> 24u, bitcast<i32>(w << 16u) >> 24u, bitcast<i32>(w << 8u) >> 24u, bitcast<i32>(w) >> 24u));
}
fn kld(f: u32) -> vec4<f32> {
	return unq8(Kc[f]) * bitcast<f32>(Kc[P.kvsoff + (f / D4) * G + (f % D4) / GV]);
}
fn vld(f: u32) -> vec4<f32> {
	return unq8(Vc[f]) * bitcast<f32>(Vc[P.kvsoff + (f / D4) * G + (f % D4) / GV]);
}
{{else if .Q4}}// q4 keys and values (kvquant.go): vec4 f is half a word of eight
// 4-bit codes (the first element in the low bits) times its group's scale
const GV: u32 = {{.GV}}u;
const G: u32 = {{.G}}u;
const DW: u32 = D / 8u;
fn unq4(w: u32, c4: u32) -> vec4<f32> {
	let h = w >> (16u * (c4 % 2u));
	return vec4<f32>(vec4<i32>(bitcast<i32>(h << 28u) >> 28u, bitcast<i32>(h << 24u) >> 28u, bitcast<i32>(h << 20u) >> 28u, bitcast<i32>(h << 16u) >> 28u));
}
fn kld(f: u32) -> vec4<f32> {
	let hr = f / D4;
	let c4 = f % D4;
	return unq4(Kc[hr * DW + c4 / 2u], c4) * bitcast<f32>(Kc[P.kvsoff + hr * G + c4 / GV]);
}
fn vld(f: u32) -> vec4<f32> {
	let hr = f / D4;
	let c4 = f % D4;
	return unq4(Vc[hr * DW + c4 / 2u], c4) * bitcast<f32>(Vc[P.kvsoff + hr * G + c4 / GV]);
}
{{else}}fn kld(f: u32) -> vec4<f32> {
	return Kc[f];
}
fn vld(f: u32) -> vec4<f32> {
	return Vc[f];
}
{{end}}
fn keyRow(p: u32) -> u32 {
	if (P.ring > 0u) {
		return p % P.ring;
	}
	return p;
}

// wgMax and wgSum reduce one value per invocation over the workgroup with
// two barriers (16 values per invocation, then 8).
fn wgMax(li: u32, v: f32) -> f32 {
	red[li] = v;
	workgroupBarrier();
	if (li < 8u) {
		var t = red[li * 16u];
		for (var j = 1u; j < 16u; j++) {
			t = max(t, red[li * 16u + j]);
		}
		red2[li] = t;
	}
	workgroupBarrier();
	var t = red2[0];
	for (var j = 1u; j < 8u; j++) {
		t = max(t, red2[j]);
	}
	return t;
}

fn wgSum(li: u32, v: f32) -> f32 {
	red[li] = v;
	workgroupBarrier();
	if (li < 8u) {
		var t = 0.0;
		for (var j = 0u; j < 16u; j++) {
			t += red[li * 16u + j];
		}
		red2[li] = t;
	}
	workgroupBarrier();
	var t = 0.0;
	for (var j = 0u; j < 8u; j++) {
		t += red2[j];
	}
	return t;
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
{{if .Spans}}		// a query inside a span also sees the span's later keys
		hi = max(hi, SpanEnd[i]);
{{end}}	}
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
	let kg = li / TP;
	let d4 = li % TP;
{{range $u := seq .DU4}}	var acc{{$u}} = vec4<f32>(0.0);
{{end}}
	for (var t0 = a; t0 < b; t0 += 128u) {
		let p = t0 + li;
		var score = NONE;
		if (p < b) {
			let kb = (keyRow(p) * P.hkv + kvh) * D4;
			var d4s = vec4<f32>(0.0);
			for (var j = 0u; j < D4; j += {{.SK}}u) {
{{range $k := seq .SK}}				let k{{$k}} = kld(kb + j + {{$k}}u);
{{end}}{{range $k := seq .SK}}				d4s += qs[j + {{$k}}u] * k{{$k}};
{{end}}			}
			var d = (d4s.x + d4s.y) + (d4s.z + d4s.w);
			d = d * P.scale;
			if (P.softcap > 0.0) {
				d = P.softcap * tanh1(d / P.softcap);
			}
			score = d;
		}
		let mn = max(m, wgMax(li, score));
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
{{range $u := seq .DU4}}		acc{{$u}} *= corr;
{{end}}		var tt = kg;
		for (; tt + {{add .UK -1}}u * KG < nt; tt += {{.UK}}u * KG) {
{{range $k := seq .UK}}			let r{{$k}} = (keyRow(t0 + tt + {{$k}}u * KG) * P.hkv + kvh) * D4 + d4;
			let w{{$k}} = sc[tt + {{$k}}u * KG];
{{end}}{{range $u := seq .DU4}}			if (d4 + {{mul $u $.TP}}u < D4) {
{{range $k := seq $.UK}}				let v{{$k}} = vld(r{{$k}} + {{mul $u $.TP}}u);
{{end}}{{range $k := seq $.UK}}				acc{{$u}} += w{{$k}} * v{{$k}};
{{end}}			}
{{end}}		}
		for (; tt < nt; tt += KG) {
			let r0 = (keyRow(t0 + tt) * P.hkv + kvh) * D4 + d4;
			let w0 = sc[tt];
{{range $u := seq .DU4}}			if (d4 + {{mul $u $.TP}}u < D4) {
				acc{{$u}} += w0 * vld(r0 + {{mul $u $.TP}}u);
			}
{{end}}		}
		workgroupBarrier();
	}
	let total = wgSum(li, l);
{{range $u := seq .DU4}}	vsum[{{mul $u 128}}u + li] = acc{{$u}};
{{end}}	workgroupBarrier();
	if (kg == 0u) {
{{range $u := seq .DU4}}		{
			let c4 = d4 + {{mul $u $.TP}}u;
			var v = vsum[{{mul $u 128}}u + d4];
			for (var g = 1u; g < KG; g++) {
				v += vsum[{{mul $u 128}}u + g * TP + d4];
			}
			if (c4 < D4) {
				if (P.splits == 1u) {
					let ob = P.off + (i * P.hq + h) * D + 4u * c4;
					let r = v / total;
					O[ob] = r.x;
					O[ob + 1u] = r.y;
					O[ob + 2u] = r.z;
					O[ob + 3u] = r.w;
				}{{if $.Split}} else {
					let pb = ((s * P.nq + i) * P.hq + h) * PS;
					if (c4 == 0u) {
						Part[pb] = m;
						Part[pb + 1u] = total;
					}
					Part[pb + 2u + 4u * c4] = v.x;
					Part[pb + 3u + 4u * c4] = v.y;
					Part[pb + 4u + 4u * c4] = v.z;
					Part[pb + 5u + 4u * c4] = v.w;
				}{{end}}
			}
		}
{{end}}	}
{{if .Split}}	if (P.splits == 1u) {
		return;
	}
	// this split's record, then its count (a device-scope barrier orders
	// them); the last to count merges the records, after another barrier
	// so that it sees them
	storageBarrier();
	let qh = i * P.hq + h;
	if (li == 0u) {
		done = atomicAdd(&Cnt[qh], 1u);
	}
	if (workgroupUniformLoad(&done) + 1u < P.splits) {
		return;
	}
	storageBarrier();
	if (li == 0u) {
		atomicStore(&Cnt[qh], 0u);
	}
	combine(qh, li);
{{end}}}

// combine merges the splits' records of query-head qh into O. The
// records are read in parallel, not one split after another (a chain of
// dependent reads per split): invocation t reads split t's (m, l), the
// workgroup reduces them, and each output element then loads its sums of
// 8 splits at a time.
{{if .Split}}fn combine(qh: u32, li: u32) {
	let stride = P.nq * P.hq * PS;
	var mt = NONE;
	var lt = 0.0;
	if (li < P.splits) {
		mt = Part[li * stride + qh * PS];
		lt = Part[li * stride + qh * PS + 1u];
	}
	let mx = wgMax(li, mt);
	let wt = exp(mt - mx);
	let total = wgSum(li, lt * wt);
	if (li < MAXS) {
		// a split's weight: 0 past the last (mt is NONE there)
		cw[li] = wt / total;
	}
	workgroupBarrier();
	let last = P.splits - 1u;
	for (var j = li; j < D; j += 128u) {
		let pj = qh * PS + 2u + j;
		var v = 0.0;
		for (var t = 0u; t < P.splits; t += 8u) {
{{range $k := seq 8}}			let v{{$k}} = Part[min(t + {{$k}}u, last) * stride + pj];
{{end}}{{range $k := seq 8}}			v += cw[t + {{$k}}u] * v{{$k}};
{{end}}		}
		O[P.off + qh * D + j] = v;
	}
}
{{end}}{{end}}


{{define "kvstore"}}
// kvstore quantizes head rows of X into a quantized KV buffer
// (kvquant.go), the rule of tensor.QuantizeQ8 (QuantizeQ4): one invocation
// per group of a head row writes its codes, four (eight) to a word, and
// its scale max|x|/127 (/7).
struct Params {
	count: u32, hr0: u32, soff: u32, pad0: u32,
	pad1: u32, pad2: u32, pad3: u32, pad4: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> C: array<u32>;
const D: u32 = {{.D}}u;
const G: u32 = {{.G}}u;
const GS: u32 = {{.Group}}u;
{{template "grid"}}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let i = wgIndex(wid, nwg) * 64u + li;
	if (i >= P.count) {
		return;
	}
	let hr = i / G;
	let gi = i % G;
	let c0 = gi * GS;
	let c1 = min(D, c0 + GS);
	let xb = hr * D;
	var amax = 0.0;
	for (var c = c0; c < c1; c++) {
		amax = max(amax, abs(X[xb + c]));
	}
	let d = amax / {{if .Q4}}7.0{{else}}127.0{{end}};
	var inv = 0.0;
	if (d > 0.0) {
		inv = 1.0 / d;
	}
	let ohr = P.hr0 + hr;
{{if .Q4}}	for (var c = c0; c < c1; c += 8u) {
		var w = 0u;
		for (var j = 0u; j < 8u; j++) {
			let v = X[xb + c + j] * inv;
			let q = i32(clamp(sign(v) * floor(abs(v) + 0.5), -7.0, 7.0));
			w = w | ((bitcast<u32>(q) & 0xfu) << (4u * j));
		}
		C[ohr * (D / 8u) + c / 8u] = w;
	}
{{else}}	for (var c = c0; c < c1; c += 4u) {
		var w = 0u;
		for (var j = 0u; j < 4u; j++) {
			// rounded half away from zero, as Go's math.Round
			let v = X[xb + c + j] * inv;
			let q = i32(clamp(sign(v) * floor(abs(v) + 0.5), -127.0, 127.0));
			w = w | ((bitcast<u32>(q) & 0xffu) << (8u * j));
		}
		C[ohr * (D / 4u) + c / 4u] = w;
	}
{{end}}	C[P.soff + ohr * G + gi] = bitcast<u32>(d);
}
{{end}}
