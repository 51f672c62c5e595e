package retrieval

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// footprint is the memory a value holds: its live heap and the resident set that goes with it,
// each in bytes or with the reason it could not be measured.
type footprint struct {
	Heap, RSS held
}

// held is one figure of a footprint: Bytes when Err is nil.
type held struct {
	Bytes float64
	Err   error
}

// MB is the figure in MiB, nil when it was not measured.
func (h held) MB() *float64 {
	if h.Err != nil {
		return nil
	}
	mb := h.Bytes / (1 << 20)
	return &mb
}

// heapSlack is how far from the first reading the live heap may end once the value is released
// and still count as back where it began (a tenth of the figure where that is more): the runtime's
// own bookkeeping moves it by a few kilobytes between collections.
const heapSlack = 64 << 10

// retained measures what the value build returns holds in memory. Three readings, each after two
// forced collections (the second frees what the first's finalizers released) and freed memory
// returned to the system: before build runs, with its value alive, and once the value is released.
// A figure is the second reading less the first.
//
// The heap's is refused, with the reason, when it is not above zero, or when the third reading is
// not back at the first: then something else in the process allocated or freed meanwhile, and the
// difference is not the value's. The resident set's is refused when it is not above zero or the
// heap's is refused; it is not held to the third reading, since the runtime keeps the metadata of
// the heap it grew for the value. The caller keeps anything else that might run meanwhile
// stopped.
func retained(build func() any) footprint {
	before := readMemory()
	v := build()
	with := readMemory()
	runtime.KeepAlive(v)
	without := readMemory() // v is dead here: nothing reads it after the KeepAlive

	var fp footprint
	d := with.heap - before.heap
	switch drift := without.heap - before.heap; {
	case d <= 0:
		fp.Heap.Err = fmt.Errorf("the heap fell by %.1f MB while the value was built: other memory was freed meanwhile", -d/(1<<20))
	case abs(drift) > max(heapSlack, d/10):
		fp.Heap.Err = fmt.Errorf("the heap without the value ended %+.1f MB from where it began, beside %.1f MB with it: other memory was allocated or freed meanwhile", drift/(1<<20), d/(1<<20))
	default:
		fp.Heap.Bytes = d
	}
	d = with.rss - before.rss
	switch {
	case before.rss == 0:
		fp.RSS.Err = errors.New("no resident set: /proc/self/status has no VmRSS here")
	case fp.Heap.Err != nil:
		fp.RSS.Err = errors.New("no resident set: the heap's readings show other memory moving meanwhile")
	case d <= 0:
		fp.RSS.Err = fmt.Errorf("the resident set fell by %.1f MB while the value was built", -d/(1<<20))
	default:
		fp.RSS.Bytes = d
	}
	return fp
}

func abs(x float64) float64 { return max(x, -x) }

// reading is the process's live heap (HeapAlloc) and resident set (VmRSS, 0 where there is none),
// in bytes.
type reading struct{ heap, rss float64 }

// readMemory reads the memory in use after two collections and freed memory returned to the
// system (debug.FreeOSMemory collects too).
func readMemory() reading {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return reading{heap: float64(m.HeapAlloc), rss: residentBytes()}
}

// residentBytes reads VmRSS from /proc/self/status (0 where there is none).
func residentBytes() float64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb * 1024
		}
	}
	return 0
}
