package access

import "testing"

// BenchmarkPolicy is the access check of one request: its identity's policy, then one tool.
func BenchmarkPolicy(b *testing.B) {
	h, err := New(testOrgs(b))
	if err != nil {
		b.Fatal(err)
	}
	id := Identity{Org: "acme", Team: "research", Agent: "summariser"}
	b.ReportAllocs()
	for b.Loop() {
		_, permits := h.Policy(id)
		if !permits("calculator.add") {
			b.Fatal("calculator.add refused")
		}
	}
}
