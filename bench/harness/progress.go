package harness

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress draws a bar of cases done on a terminal, redrawn at most ten times a second; on
// anything else it writes one line per dataset when it is done.
type progress struct {
	w     io.Writer
	tty   bool
	total int
	start time.Time

	mu     sync.Mutex // guards done, last, perDS, cur
	done   int
	last   time.Time
	perDS  map[string]int
	cur    string
	closed bool
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total, start: time.Now(), perDS: map[string]int{}}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) add(dataset string) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.tty && p.cur != "" && p.cur != dataset {
		fmt.Fprintf(p.w, "bench: %s done (%d queries, %.1f s so far)\n", p.cur, p.perDS[p.cur], time.Since(p.start).Seconds())
	}
	p.cur = dataset
	p.done++
	p.perDS[dataset]++
	if p.tty && (time.Since(p.last) > 100*time.Millisecond || p.done == p.total) {
		p.last = time.Now()
		p.draw()
	}
}

func (p *progress) draw() {
	const width = 30
	n := width
	if p.total > 0 {
		n = p.done * width / p.total
	}
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d  %-24s %5.1fs", strings.Repeat("#", n), strings.Repeat(".", width-n), p.done, p.total, p.cur, time.Since(p.start).Seconds())
}

func (p *progress) finish() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	switch {
	case p.tty:
		p.draw()
		fmt.Fprintln(p.w)
	case p.cur != "":
		fmt.Fprintf(p.w, "bench: %s done (%d queries, %.1f s so far)\n", p.cur, p.perDS[p.cur], time.Since(p.start).Seconds())
	}
}
