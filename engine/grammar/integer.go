package grammar

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// integer reads a JSON integer within the schema's bounds, written as a
// grammar over decimal digits (the classic digit-range construction).
func (c *compiler) integer(s map[string]any, path string) frag {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	hasLo, hasHi := false, false
	bound := func(key string, exclusive, lower bool) bool {
		v, ok := s[key]
		if !ok {
			return true
		}
		if _, isBool := v.(bool); isBool {
			c.fail(path, key, "the draft-4 boolean form is not supported; give the bound as a number")
			return false
		}
		n, ok := v.(json.Number)
		f, err := strconv.ParseFloat(string(n), 64)
		if !ok || err != nil || math.Abs(f) > 1e18 {
			c.fail(path, key, "must be a number within ±1e18")
			return false
		}
		var x int64
		if lower {
			x = int64(math.Ceil(f))
			if exclusive && float64(x) == f {
				x++
			}
			if !hasLo || x > lo {
				lo, hasLo = x, true
			}
		} else {
			x = int64(math.Floor(f))
			if exclusive && float64(x) == f {
				x--
			}
			if !hasHi || x < hi {
				hi, hasHi = x, true
			}
		}
		return true
	}
	if !bound("minimum", false, true) || !bound("exclusiveMinimum", true, true) ||
		!bound("maximum", false, false) || !bound("exclusiveMaximum", true, false) {
		return c.b.empty()
	}
	if !hasLo && !hasHi {
		return c.b.call(c.l.integer)
	}
	if hasLo && hasHi && lo > hi {
		return c.fail(path, "minimum", "no integer lies between %d and %d", lo, hi)
	}
	var alts []frag
	if !hasLo || lo < 0 {
		// Negative numbers: "-" then a magnitude in [max(1, -hi), -lo].
		mlo, mhi := uint64(1), uint64(0) // mhi 0: no upper bound
		if hasHi && hi < 0 {
			mlo = uint64(-hi)
		}
		if hasLo {
			mhi = uint64(-lo)
		}
		alts = append(alts, c.b.seq(c.b.lit("-"), c.magnitudes(mlo, mhi, hasLo)))
	}
	if !hasHi || hi >= 0 {
		plo := uint64(0)
		if hasLo && lo > 0 {
			plo = uint64(lo)
		}
		alts = append(alts, c.magnitudes(plo, uint64(max(hi, 0)), hasHi))
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return c.b.alt(alts...)
}

// magnitudes reads the decimal numbers in [lo, hi] (hi unbounded when
// !bounded, up to maxIntDigits digits), without leading zeros.
func (c *compiler) magnitudes(lo, hi uint64, bounded bool) frag {
	b := c.b
	los := strconv.FormatUint(lo, 10)
	his := strings.Repeat("9", maxIntDigits)
	if bounded {
		his = strconv.FormatUint(hi, 10)
	}
	if len(los) == len(his) {
		return c.sameLength(los, his)
	}
	// lo's length up to its nines; the lengths between, whole; hi's
	// length from its 10…0.
	alts := []frag{c.sameLength(los, strings.Repeat("9", len(los)))}
	if len(his)-len(los) > 1 {
		alts = append(alts, b.seq(b.ranges('1', '9'), b.rep(b.digit, len(los), len(his)-2)))
	}
	alts = append(alts, c.sameLength("1"+strings.Repeat("0", len(his)-1), his))
	return b.alt(alts...)
}

// sameLength reads the numbers from..to, both of the same number of digits.
func (c *compiler) sameLength(from, to string) frag {
	b := c.b
	n := len(from)
	if strings.Trim(from, "0") == "" && strings.Trim(to, "9") == "" {
		return b.rep(b.digit, n, n) // every string of n digits
	}
	if n == 1 {
		return b.ranges(from[0], to[0])
	}
	if from[0] == to[0] {
		return b.seq(b.lit(from[:1]), c.sameLength(from[1:], to[1:]))
	}
	alts := []frag{
		b.seq(b.lit(from[:1]), c.sameLength(from[1:], strings.Repeat("9", n-1))),
		b.seq(b.lit(to[:1]), c.sameLength(strings.Repeat("0", n-1), to[1:])),
	}
	if to[0]-from[0] > 1 {
		alts = append(alts, b.seq(b.ranges(from[0]+1, to[0]-1), b.rep(b.digit, n-1, n-1)))
	}
	return b.alt(alts...)
}
