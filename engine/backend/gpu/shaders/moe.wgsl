{{define "route"}}
// route: one invocation per row of router scores. The k best scores are
// picked in order (ties: the lower id first) by k scans, each taking the
// best score ranked below the previous pick, so no per-row list is kept.
struct Params {
	n: u32, e: u32, k: u32, sigmoid: u32,
	norm: u32, off: u32, pad0: u32, pad1: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
{{with .Scale}}{{.}}{{end}}
{{template "grid"}}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let r = wgIndex(wid, nwg) * 64u + li;
	if (r >= P.n) {
		return;
	}
	let base = r * P.e;
	var mx = X[base];
	for (var c = 1u; c < P.e; c++) {
		mx = max(mx, X[base + c]);
	}
	var sum = 0.0;
	for (var c = 0u; c < P.e; c++) {
		sum += exp(X[base + c] - mx);
	}
	let o = P.off + r * 2u * P.k;
	var pv = 0.0;
	var pi = 0xffffffffu;
	var tot = 0.0;
	for (var j = 0u; j < P.k; j++) {
		var bv = 0.0;
		var bi = 0xffffffffu;
		for (var c = 0u; c < P.e; c++) {
			let v = X[base + c];
			// ranked below the previous pick: smaller, or equal with a higher id
			let below = pi == 0xffffffffu || v < pv || (v == pv && c > pi);
			if (below && (bi == 0xffffffffu || v > bv)) {
				bv = v;
				bi = c;
			}
		}
		pv = bv;
		pi = bi;
		var w = exp(bv - mx) / sum;
		if (P.sigmoid == 1u) {
			w = 1.0 / (1.0 + exp(-bv));
		}
		O[o + j] = w;
		O[o + P.k + j] = f32(bi);
		tot += w;
	}
	if (P.norm == 1u) {
		for (var j = 0u; j < P.k; j++) {
			O[o + j] = O[o + j] / tot;
		}
	}
{{- if .Scale}}
	for (var j = 0u; j < P.k; j++) {
		O[o + j] = O[o + j] * es_get(0u, u32(O[o + P.k + j]));
	}
{{- end}}
}
{{end}}

{{define "expertHead"}}
// The parameters and bindings of expertmm and expertgemm (the weight's
// accessor is .Acc). tiles: workgroups (tiles of output rows) per slot
// (expertmm) or per expert (expertgemm); e0, groups (expertgemm only): the
// first expert of the weight block, the workgroups.
struct Params {
	slots: u32, k: u32, out: u32, cols: u32,
	perSlot: u32, experts: u32, tiles: u32, off: u32,
	row0: u32, rows: u32, e0: u32, groups: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> R: array<f32>;
@group(0) @binding(3) var<storage, read_write> O: array<f32>;
{{.Acc}}
{{template "grid"}}
{{- end}}

{{define "expertmm"}}
// expertmm: for slot s = (token t, j) and output row o of the expert e
// routed there, O[s, o] = Σ_c w[e·out + o, c] · X[t or s, c]. A workgroup
// covers {{.Rows}} output rows of one slot (so they share an input row),
// {{.Lanes}} invocations per row, each summing every {{.Lanes}}th 32-element block
// (or element, when the width is not a multiple of 32), so neighbouring
// invocations read neighbouring words of the row; the lanes' partial sums
// are added in workgroup memory. w is the row block [row0, row0+rows) of
// the stacked weight seen as [experts·out, cols].
{{template "expertHead" .}}
var<workgroup> part: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let wg = wgIndex(wid, nwg);
	let s = wg / P.tiles;
	let lane = li % {{.Lanes}}u;
	let o = (wg % P.tiles) * {{.Rows}}u + li / {{.Lanes}}u;
	var valid = s < P.slots && o < P.out;
	var row = 0u;
	var xb = 0u;
	if (valid) {
		let t = s / P.k;
		let j = s % P.k;
		let e = min(u32(max(R[t * 2u * P.k + P.k + j], 0.0)), P.experts - 1u);
		// a weight split into row blocks runs one kernel per block
		let grow = e * P.out + o;
		valid = grow >= P.row0 && grow < P.row0 + P.rows;
		row = grow - P.row0;
		xb = t * P.cols;
		if (P.perSlot == 1u) {
			xb = s * P.cols;
		}
	}
	var acc = 0.0;
	if (valid) {
{{- if .Block}}
		for (var b = lane; b < P.cols / 32u; b += {{.Lanes}}u) {
			let i = xb + b * 32u;
			var xv: array<vec4<f32>, 8>;
			var xs = 0.0;
			for (var q = 0u; q < 8u; q++) {
				xv[q] = vec4<f32>(X[i + 4u * q], X[i + 4u * q + 1u], X[i + 4u * q + 2u], X[i + 4u * q + 3u]);
				xs += xv[q].x + xv[q].y + xv[q].z + xv[q].w;
			}
			acc += w_dot(row, b, xv[0], xv[1], xv[2], xv[3], xv[4], xv[5], xv[6], xv[7], xs);
		}
{{- else}}
		for (var c = lane; c < P.cols; c += {{.Lanes}}u) {
			acc += w_get(row, c) * X[xb + c];
		}
{{- end}}
	}
	part[li] = acc;
	workgroupBarrier();
	for (var st = {{.Lanes}}u / 2u; st > 0u; st = st / 2u) {
		if (lane < st) {
			part[li] += part[li + st];
		}
		workgroupBarrier();
	}
	if (valid && lane == 0u) {
		O[P.off + s * P.out + o] = part[li];
	}
}
{{end}}

{{define "expertsum"}}
// expertsum: O[t, c] = Σ_j R[t, j] · Y[t, j, c], one invocation per output.
struct Params {
	n: u32, k: u32, d: u32, off: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> Y: array<f32>;
@group(0) @binding(2) var<storage, read> R: array<f32>;
@group(0) @binding(3) var<storage, read_write> O: array<f32>;
{{template "grid"}}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let i = wgIndex(wid, nwg) * 256u + li;
	if (i >= P.n * P.d) {
		return;
	}
	let t = i / P.d;
	let c = i % P.d;
	var acc = 0.0;
	for (var j = 0u; j < P.k; j++) {
		acc += R[t * 2u * P.k + j] * Y[(t * P.k + j) * P.d + c];
	}
	O[P.off + i] = acc;
}
{{end}}

{{define "expertgemm"}}
// expertgemm: ExpertMatMul grouped by expert, for many rows of x. A
// workgroup owns {{.Rows}} output rows of one expert e (those of its tile
// that lie in the weight block [row0, row0+rows), when the weight is
// split) and finds the slots routed to e by scanning the route table 256
// slots at a time, appending them to a list in workgroup memory. When the
// list is nearly full, or the table is done, it multiplies its rows by the
// listed slots' x rows, {{.Pairs}} slots at a time, like gemm: {{.Slice}}-wide
// slices of the weight (dequantized once per block of slots) and of the
// slots' x rows in workgroup memory, 4 rows × 4 slots of outputs per
// invocation. So the weight is read once per {{.Pairs}} slots routed to its
// expert instead of once per slot. The list's order (atomic appends) does
// not matter: each slot's outputs are its own.
{{template "expertHead" .}}
// weight slice [{{.Slice}} cols][{{.Rows}}/4 row quads], x slice [{{.Slice}} cols][{{.Pairs}}/4 slot
// quads]: the inner loop's reads of neighbouring invocations are neighbours
var<workgroup> Ws: array<vec4<f32>, {{div (mul .Slice .Rows) 4}}>;
var<workgroup> Xs: array<vec4<f32>, {{div (mul .Slice .Pairs) 4}}>;
var<workgroup> list: array<u32, {{.Cap}}>;
var<workgroup> count: atomic<u32>;
var<workgroup> countU: u32;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let wg = wgIndex(wid, nwg);
	if (wg >= P.groups) {
		return;
	}
	let e = P.e0 + wg / P.tiles;
	let o0 = (wg % P.tiles) * {{.Rows}}u;
	// this tile's rows in the bound block, as expert-local rows [lo, hi)
	let g0 = e * P.out;
	let lo = max(o0, max(P.row0, g0) - g0);
	let hi = min(min(o0 + {{.Rows}}u, P.out), min(P.row0 + P.rows, g0 + P.out) - g0);
	if (lo >= hi) {
		return;
	}
	let tx = li % {{div .Rows 4}}u;
	let ty = li / {{div .Rows 4}}u;
	if (li == 0u) {
		atomicStore(&count, 0u);
	}
	workgroupBarrier();
	// four named sums, not an array: an array indexed in a loop may be
	// kept in memory rather than registers
	var a0 = vec4<f32>(0.0);
	var a1 = vec4<f32>(0.0);
	var a2 = vec4<f32>(0.0);
	var a3 = vec4<f32>(0.0);
	for (var c0 = 0u; c0 < P.slots; c0 += 256u) {
		let s = c0 + li;
		if (s < P.slots) {
			let id = min(u32(max(R[(s / P.k) * 2u * P.k + P.k + s % P.k], 0.0)), P.experts - 1u);
			if (id == e) {
				list[atomicAdd(&count, 1u)] = s;
			}
		}
		workgroupBarrier();
		if (li == 0u) {
			countU = atomicLoad(&count);
		}
		let m = workgroupUniformLoad(&countU);
		if (m == 0u || (m <= {{.Flush}}u && c0 + 256u < P.slots)) {
			continue;
		}
		for (var p0 = 0u; p0 < m; p0 += {{.Pairs}}u) {
			a0 = vec4<f32>(0.0);
			a1 = vec4<f32>(0.0);
			a2 = vec4<f32>(0.0);
			a3 = vec4<f32>(0.0);
			for (var k0 = 0u; k0 < P.cols; k0 += {{.Slice}}u) {
				// 8 columns of one row per item, neighbouring items neighbouring
				// columns
				for (var q = li; q < {{div (mul .Slice .Rows) 8}}u; q += 256u) {
					let cl = (q % {{div .Slice 8}}u) * 8u;
					let r = q / {{div .Slice 8}}u;
					let o = o0 + r;
					stage8(g0 + o - P.row0, r, cl, k0 + cl, o >= lo && o < hi);
				}
				for (var q = li; q < {{div (mul .Slice .Pairs) 4}}u; q += 256u) {
					let c = k0 + q % {{.Slice}}u;
					let p = p0 + (q / {{.Slice}}u) * 4u;
					var v = vec4<f32>(0.0);
					if (c < P.cols) {
						for (var i = 0u; i < 4u; i++) {
							if (p + i < m) {
								let s = list[p + i];
								var xr = s / P.k;
								if (P.perSlot == 1u) {
									xr = s;
								}
								v[i] = X[xr * P.cols + c];
							}
						}
					}
					Xs[(q % {{.Slice}}u) * {{div .Pairs 4}}u + q / {{.Slice}}u] = v;
				}
				workgroupBarrier();
				for (var kk = 0u; kk < {{.Slice}}u; kk++) {
					let w = Ws[kk * {{div .Rows 4}}u + tx];
					let x = Xs[kk * {{div .Pairs 4}}u + ty];
					a0 = fma(vec4<f32>(x.x), w, a0);
					a1 = fma(vec4<f32>(x.y), w, a1);
					a2 = fma(vec4<f32>(x.z), w, a2);
					a3 = fma(vec4<f32>(x.w), w, a3);
				}
				workgroupBarrier();
			}
			let p = p0 + ty * 4u;
			let o = o0 + tx * 4u;
			put(p, m, o, lo, hi, a0);
			put(p + 1u, m, o, lo, hi, a1);
			put(p + 2u, m, o, lo, hi, a2);
			put(p + 3u, m, o, lo, hi, a3);
		}
		// every invocation is past its last read of the list
		workgroupBarrier();
		if (li == 0u) {
			atomicStore(&count, 0u);
		}
		workgroupBarrier();
	}
}

// put stores the sums v of listed slot p (if p < m) for rows o..o+3 that
// lie in [lo, hi).
fn put(p: u32, m: u32, o: u32, lo: u32, hi: u32, v: vec4<f32>) {
	if (p >= m) {
		return;
	}
	let base = P.off + list[p] * P.out;
	for (var i = 0u; i < 4u; i++) {
		if (o + i >= lo && o + i < hi) {
			O[base + o + i] = v[i];
		}
	}
}

// stage8 puts the weight's columns c..c+7 of row (of the block; tile row r)
// at columns cl..cl+7 of the slice: zeros past the width or when !ok.
// Quantized: one scale and bias for the 8 (a group is 16 or a multiple of 32).
fn stage8(row: u32, r: u32, cl: u32, c: u32, ok: bool) {
	let at = cl * {{div .Rows 4}}u + r / 4u;
	let ri = r % 4u;
	if (!ok || c >= P.cols) {
		for (var j = 0u; j < 8u; j++) {
			Ws[at + j * {{div .Rows 4}}u][ri] = 0.0;
		}
		return;
	}
{{- if .Word}}
	// {{.Bits}} bits: the 8 levels lie in one word (two for 8 bits), loaded once
	let bit0 = c * {{.Bits}}u;
	let wi = row * (P.cols * {{.Bits}}u / 32u) + (bit0 >> 5u);
	let w0 = w_w(wi);
{{- if eq .Bits 8}}
	let w1 = w_w(wi + 1u);
{{- else}}
	let w1 = w0;
{{- end}}
{{- end}}
{{- if .Quant}}
	let sb = w_sb(row, c);
{{- end}}
	for (var j = 0u; j < 8u; j++) {
		var v = 0.0;
		if (c + j < P.cols) {
{{- if .Word}}
			let b = (bit0 & 31u) + j * {{.Bits}}u;
			v = f32((select(w0, w1, b >= 32u) >> (b & 31u)) & {{.Mask}}u) * sb.x + sb.y;
{{- else if .Quant}}
			v = f32(w_q(row, c + j)) * sb.x + sb.y;
{{- else}}
			v = w_get(row, c + j);
{{- end}}
		}
		Ws[at + j * {{div .Rows 4}}u][ri] = v;
	}
}
{{end}}
