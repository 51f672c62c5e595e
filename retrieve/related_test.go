package retrieve

import (
	"runtime"
	"slices"
	"testing"
)

// TestRelatedTableBounded checks what WordNet's related words cost: the table is sorted (the
// lookup searches it), and once loaded it holds under 512 KB of heap, shared by every index.
func TestRelatedTableBounded(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var got []string
	related(Stem("multiplication"), func(s string) { got = append(got, s) })
	runtime.GC()
	runtime.ReadMemStats(&after)
	if !slices.Contains(got, Stem("multiply")) {
		t.Errorf("multiplication: got related %q, want multiply's stem among them", got)
	}
	if !slices.IsSorted(relatedKeys) {
		t.Error("related.txt is not sorted by key")
	}
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("related words: %d keys, %d bytes embedded, %d bytes of heap once loaded", len(relatedKeys), len(relatedText), heap)
	if heap > 512<<10 {
		t.Errorf("the related table holds %d bytes of heap, want under 512 KB", heap)
	}
}
