// The terminal progress bar of `hearth pull`.

package registry

import (
	"fmt"
	"io"
	"strings"
	"time"

	"hearth/engine/fit"
)

// Bar draws Pull's progress on one terminal line, redrawn in place:
//
//	pulling Qwen/Qwen3-0.6B  42% [=======>          ] 512.0 MB / 1.2 GB  31.2 MB/s  0:23 left
//
// and a closing line when the pull is done. Pass its Update to Pull.
type Bar struct {
	w     io.Writer
	now   func() time.Time
	width int // cells of the bar

	start   time.Time // first downloading report
	base    int64     // bytes present at start: not part of the rate
	drawn   int       // length of the last line, to blank what is left
	started bool
}

// NewBar returns a bar that draws on w (a terminal: it uses carriage
// returns).
func NewBar(w io.Writer) *Bar { return &Bar{w: w, now: time.Now, width: 24} }

// Update draws p.
func (b *Bar) Update(p Progress) {
	switch p.Status {
	case StatusResolving:
		b.line(fmt.Sprintf("pulling %s: resolving %s", p.Repo, p.Revision))
	case StatusDownloading:
		if !b.started {
			b.started, b.start, b.base = true, b.now(), p.Completed
		}
		b.line(b.downloading(p))
	case StatusDone:
		b.line(b.done(p))
		fmt.Fprintln(b.w)
		b.drawn = 0
	}
}

// End finishes the line being redrawn, if there is one, so that what is
// printed next (an error) starts on a line of its own.
func (b *Bar) End() {
	if b.drawn > 0 {
		fmt.Fprintln(b.w)
		b.drawn = 0
	}
}

func (b *Bar) downloading(p Progress) string {
	frac := 1.0
	if p.Total > 0 {
		frac = float64(p.Completed) / float64(p.Total)
	}
	cells := int(frac * float64(b.width))
	bar := strings.Repeat("=", cells)
	if cells < b.width {
		bar += ">" + strings.Repeat(" ", b.width-cells-1)
	}
	s := fmt.Sprintf("pulling %s %3.0f%% [%s] %s / %s", p.Repo, 100*frac, bar, fit.FormatBytes(p.Completed), fit.FormatBytes(p.Total))
	if rate, ok := b.rate(p); ok {
		s += fmt.Sprintf("  %s/s", fit.FormatBytes(int64(rate)))
		if rate > 0 {
			left := time.Duration(float64(p.Total-p.Completed) / rate * float64(time.Second))
			s += "  " + clock(left) + " left"
		}
	}
	return s
}

func (b *Bar) done(p Progress) string {
	got := p.Completed - b.base
	if !b.started || got <= 0 {
		return fmt.Sprintf("%s@%s is up to date (%s)", p.Repo, shortCommit(p.Commit), fit.FormatBytes(p.Total))
	}
	s := fmt.Sprintf("pulled %s@%s: %s in %s", p.Repo, shortCommit(p.Commit), fit.FormatBytes(got), clock(b.now().Sub(b.start)))
	if rate, ok := b.rate(p); ok {
		s += fmt.Sprintf(" (%s/s)", fit.FormatBytes(int64(rate)))
	}
	return s
}

// rate is the bytes per second downloaded since the first report, once
// half a second has passed.
func (b *Bar) rate(p Progress) (float64, bool) {
	el := b.now().Sub(b.start).Seconds()
	if !b.started || el < 0.5 {
		return 0, false
	}
	return float64(p.Completed-b.base) / el, true
}

// line redraws the current line with s.
func (b *Bar) line(s string) {
	pad := ""
	if n := len(s); n < b.drawn {
		pad = strings.Repeat(" ", b.drawn-n)
	}
	fmt.Fprintf(b.w, "\r%s%s", s, pad)
	b.drawn = len(s)
}

// clock prints d as m:ss, or h:mm:ss from an hour up.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
