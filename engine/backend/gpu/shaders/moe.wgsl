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
}
{{end}}

{{define "expertmm"}}
// expertmm: for slot s = (token t, j) and output row o of the expert e
// routed there, O[s, o] = Σ_c w[e·out + o, c] · X[t or s, c]. A workgroup
// covers {{.Rows}} output rows of one slot (so they share an input row),
// {{.Lanes}} invocations per row, each summing every {{.Lanes}}th 32-element block
// (or element, when the width is not a multiple of 32), so neighbouring
// invocations read neighbouring words of the row; the lanes' partial sums
// are added in workgroup memory. w is the row block [row0, row0+rows) of
// the stacked weight seen as [experts·out, cols].
struct Params {
	slots: u32, k: u32, out: u32, cols: u32,
	perSlot: u32, experts: u32, blocks: u32, off: u32,
	row0: u32, rows: u32, pad0: u32, pad1: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read> R: array<f32>;
@group(0) @binding(3) var<storage, read_write> O: array<f32>;
{{.Acc}}
{{template "grid"}}
var<workgroup> part: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let wg = wgIndex(wid, nwg);
	let s = wg / P.blocks;
	let lane = li % {{.Lanes}}u;
	let o = (wg % P.blocks) * {{.Rows}}u + li / {{.Lanes}}u;
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
