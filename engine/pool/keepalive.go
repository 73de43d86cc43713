package pool

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Forever is the keep-alive of a model that stays loaded until it is
// evicted or the pool closes; every negative keep-alive means it.
const Forever time.Duration = -1

// ParseKeepAlive reads a keep-alive the way Ollama does: a duration
// ("5m", "30s", "1h30m") or a bare number of seconds ("300", "0.5"). 0
// unloads the model once its requests are done; a negative value keeps it
// loaded (Forever).
func ParseKeepAlive(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return KeepAliveSeconds(f)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("keep_alive %q: want a duration such as \"5m\" or \"30s\", a number of seconds, 0 to unload after the request, or a negative value to keep the model loaded", s)
	}
	if d < 0 {
		return Forever, nil
	}
	return d, nil
}

// KeepAliveSeconds is a keep-alive given as a number of seconds (a JSON
// number in a request). A number longer than a duration holds (292 years)
// is an error, as the same length written as a duration is; negative
// means Forever.
func KeepAliveSeconds(f float64) (time.Duration, error) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 1):
		return 0, fmt.Errorf("keep_alive %v: not a number of seconds", f)
	case f < 0:
		return Forever, nil
	case f*float64(time.Second) >= math.MaxInt64: // float64(MaxInt64) is 2⁶³
		return 0, fmt.Errorf("keep_alive %v: longer than the longest keep-alive, %v seconds (a negative value keeps the model loaded)", f, int64(math.MaxInt64/time.Second))
	}
	return time.Duration(f * float64(time.Second)), nil
}
