// The `hearth ls` table.

package registry

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"hearth/engine/fit"
	"hearth/engine/tensor"
)

// Table writes the `hearth ls` table of recs: name, tier, size, params,
// quantization, context and fit, plus a note (why a model is unsupported,
// or that it is a draft model). fit judges a record on this machine; nil
// leaves the column out. It is called only for servable records.
func Table(w io.Writer, recs []Record, judge func(Record) fit.Verdict) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"NAME", "TIER", "SIZE", "PARAMS", "QUANT", "CONTEXT"}
	if judge != nil {
		head = append(head, "FIT")
	}
	head = append(head, "NOTE")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range recs {
		row := []string{r.Name(), r.Tier, size(r.Bytes), FormatParams(r.Params), dash(r.Quantization), ctxLabel(r.ContextTokens)}
		if judge != nil {
			row = append(row, fitCell(r, judge))
		}
		row = append(row, note(r))
		fmt.Fprintln(tw, strings.TrimRight(strings.Join(row, "\t"), "\t"))
	}
	return tw.Flush()
}

// FitAt returns a judge for Table: each record at contextTokens of context
// (0 means 8192, the default a load uses), or at the model's own context
// when that is shorter, against m.
func FitAt(m fit.Memory, contextTokens int) func(Record) fit.Verdict {
	return FitAtKV(m, contextTokens, tensor.KVF32)
}

// FitAtKV is FitAt with attention caches of element type kv (hearth ls
// --kv): a quantized cache fits a longer context in the same memory.
func FitAtKV(m fit.Memory, contextTokens int, kv tensor.KVType) func(Record) fit.Verdict {
	return func(r Record) fit.Verdict {
		return fit.Check(r.Shape, fit.Options{ContextTokens: LoadContext(r, contextTokens), KV: kv}, m)
	}
}

// LoadContext is the context a load of r asks for when contextTokens are
// requested (0: the default, 8192): never more than the model's own.
func LoadContext(r Record, contextTokens int) int {
	ctx := contextTokens
	if ctx <= 0 {
		ctx = 8192
	}
	if r.ContextTokens > 0 {
		ctx = min(ctx, r.ContextTokens)
	}
	return ctx
}

func fitCell(r Record, judge func(Record) fit.Verdict) string {
	if !r.Servable() {
		return "-"
	}
	v := judge(r)
	switch {
	case v.Status == fit.Fits:
		return string(v.Status)
	case v.MaxContextTokens == 0:
		return string(v.Status)
	case v.MaxContextTokens < v.ContextTokens:
		return fmt.Sprintf("%s (%s fits)", v.Status, ctxLabel(v.MaxContextTokens))
	}
	return string(v.Status)
}

func note(r Record) string {
	switch {
	case r.Drafter:
		return "draft model (speculative decoding only)"
	case r.Reason != "":
		return shortReason(r.Reason)
	case len(r.Capabilities) > 0:
		return strings.Join(r.Capabilities, ", ")
	}
	return ""
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// size is a byte count in decimal units, as the hub shows it.
func size(n int64) string {
	if n <= 0 {
		return "-"
	}
	return fit.FormatBytes(n)
}

// FormatParams is a parameter count as model cards write it: 596M, 7.6B
// ("-" when unknown).
func FormatParams(n int64) string {
	switch {
	case n <= 0:
		return "-"
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0fK", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// ctxLabel is a token count: 32K for 32768, 8K for 8192, 256 below 1024.
func ctxLabel(n int) string {
	switch {
	case n <= 0:
		return "-"
	case n >= 1024 && n%1024 == 0:
		return fmt.Sprintf("%dK", n/1024)
	}
	return fmt.Sprint(n)
}

// shortReason fits a reason in a table cell: the family registry's
// "unsupported model: " prefix and its list of supported types go (the
// Reason field keeps them).
func shortReason(s string) string {
	s = strings.TrimPrefix(s, "unsupported model: ")
	if i := strings.Index(s, " (supported: "); i >= 0 {
		if j := strings.Index(s[i:], ")"); j >= 0 {
			s = s[:i] + s[i+j+1:]
		}
	}
	return s
}
