package router

import "testing"

// BenchmarkPlainSelection reads a phase-1 answer of one call, as the fast path does.
//
//	go test -run '^$' -bench Plain -benchmem ./router/
func BenchmarkPlainSelection(b *testing.B) {
	const text = `{"reasoning":"The user asks for a sum of two numbers.","use_tool":true,"calls":[{"tool":"calculator.add","task":"add 2 and 3"}],"needs_more":false,"direct":true}`
	b.ReportAllocs()
	for b.Loop() {
		var sel selection
		if !plainSelection(text, &sel) {
			b.Fatal("got not plain, want plain")
		}
	}
}

// BenchmarkPlainArguments reads a phase-2 answer, as the fast path does.
//
//	go test -run '^$' -bench Plain -benchmem ./router/
func BenchmarkPlainArguments(b *testing.B) {
	const text = `{"a":2,"b":-3.5e-2,"unit":"metres","exact":true,"note":null}`
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := plainArguments(text); !ok {
			b.Fatal("got not plain, want plain")
		}
	}
}
