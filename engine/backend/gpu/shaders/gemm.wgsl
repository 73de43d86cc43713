{{define "gemm"}}
// gemm: O[off + r*stride + col0 + c] = Σ_k X[r, k] · w[c, k] for a [m, k]
// activation and an [n, k] weight, in 64×64 tiles over 32-wide slices of k.
struct Params {
	m: u32, n: u32, k: u32, off: u32,
	stride: u32, col0: u32, pad0: u32, pad1: u32,
}
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<f32>;
@group(0) @binding(2) var<storage, read_write> O: array<f32>;
{{.Acc}}
var<workgroup> As: array<f32, 2080>;
var<workgroup> Bs: array<f32, 2080>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wid: vec3<u32>) {
	let tn = wid.x;
	let tm = wid.y;
	let tx = li % 16u;
	let ty = li / 16u;
	var c0 = vec4<f32>(0.0);
	var c1 = vec4<f32>(0.0);
	var c2 = vec4<f32>(0.0);
	var c3 = vec4<f32>(0.0);
	for (var k0 = 0u; k0 < P.k; k0 += 32u) {
		for (var e = 0u; e < 8u; e++) {
			let idx = li + e * 256u;
			let r = idx / 32u;
			let c = idx % 32u;
			let gk = k0 + c;
			let gm = tm * 64u + r;
			var xv = 0.0;
			if (gm < P.m && gk < P.k) {
				xv = X[gm * P.k + gk];
			}
			As[c * 65u + r] = xv;
			let gn = tn * 64u + r;
			var wv = 0.0;
			if (gn < P.n && gk < P.k) {
				wv = w_get(gn, gk);
			}
			Bs[c * 65u + r] = wv;
		}
		workgroupBarrier();
		for (var kk = 0u; kk < 32u; kk++) {
			let ab = kk * 65u + ty * 4u;
			let bb = kk * 65u + tx * 4u;
			let a = vec4<f32>(As[ab], As[ab + 1u], As[ab + 2u], As[ab + 3u]);
			let b = vec4<f32>(Bs[bb], Bs[bb + 1u], Bs[bb + 2u], Bs[bb + 3u]);
			c0 += a.x * b;
			c1 += a.y * b;
			c2 += a.z * b;
			c3 += a.w * b;
		}
		workgroupBarrier();
	}
	let col = tn * 64u + tx * 4u;
	let row = tm * 64u + ty * 4u;
	store(row, col, c0);
	store(row + 1u, col, c1);
	store(row + 2u, col, c2);
	store(row + 3u, col, c3);
}

fn store(row: u32, col: u32, v: vec4<f32>) {
	if (row >= P.m) {
		return;
	}
	let base = P.off + row * P.stride + P.col0;
	for (var j = 0u; j < 4u; j++) {
		if (col + j < P.n) {
			O[base + col + j] = v[j];
		}
	}
}
{{end}}
