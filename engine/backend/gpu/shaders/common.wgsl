{{define "grid"}}
// wgIndex flattens a 2-D grid of workgroups (a grid dimension holds at most
// 65535).
fn wgIndex(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
	return wid.x + wid.y * nwg.x;
}
{{end}}

{{define "math"}}
// tanh1 is tanh that saturates instead of overflowing.
fn tanh1(x: f32) -> f32 {
	let e = exp(2.0 * abs(x));
	return sign(x) * (1.0 - 2.0 / (e + 1.0));
}

// erf1 is erf by Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7).
fn erf1(x: f32) -> f32 {
	let a = abs(x);
	let t = 1.0 / (1.0 + 0.3275911 * a);
	let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-a * a);
	return sign(x) * y;
}
{{end}}
