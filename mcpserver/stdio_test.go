package mcpserver_test

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"toolrouter/access"
	"toolrouter/internal/fakeollama"
	"toolrouter/mcpserver"
)

// TestStdioLineOverBound: through a real pipe, a line over max_message_bytes is answered with a
// JSON-RPC error naming the bound, and the next request is answered.
func TestStdioLineOverBound(t *testing.T) {
	const bound = 4 << 10
	e := newEnvWith(t, fakeollama.New(t), mcpserver.Options{Logger: quiet, MaxMessageBytes: bound})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- e.srv.ServeStdio(t.Context(), access.Identity{Org: "acme"}, inR, outW)
		outW.Close()
	}()
	go func() {
		big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 1<<20) + `"}}` + "\n"
		_, _ = io.WriteString(inW, big+`{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
	}()

	sc := bufio.NewScanner(outR)
	var got []map[string]any
	for len(got) < 2 && sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("answer %q is not JSON: %v", sc.Text(), err)
		}
		got = append(got, m)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeStdio: got %v, want nil once stdin closes", err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d answers, want 2", len(got))
	}
	errObj, _ := got[0]["error"].(map[string]any)
	if errObj == nil || errObj["code"] != float64(-32600) || !strings.Contains(errObj["message"].(string), "max_message_bytes") ||
		got[0]["id"] != nil {
		t.Errorf("got first answer %v, want error -32600 naming max_message_bytes with id null", got[0])
	}
	if got[1]["id"] != float64(2) || got[1]["result"] == nil {
		t.Errorf("got second answer %v, want ping 2's result", got[1])
	}
}

// TestBoundedLinesNeverHoldsTheLine: the reader passes whole lines on, skips one over the bound
// after reporting it, and never holds more than the bound of it.
func TestBoundedLinesNeverHoldsTheLine(t *testing.T) {
	const bound = 1 << 10
	tests := []struct {
		name     string
		in       string
		want     string
		tooLongs int
	}{
		{name: "short lines", in: "a\nbb\n", want: "a\nbb\n"},
		{name: "a line of exactly the bound", in: strings.Repeat("x", bound) + "\nb\n", want: strings.Repeat("x", bound) + "\nb\n"},
		{name: "a line over the bound", in: "a\n" + strings.Repeat("x", 8<<20) + "\nb\n", want: "a\nb\n", tooLongs: 1},
		{name: "a last line over the bound without newline", in: "a\n" + strings.Repeat("x", bound+1), want: "a\n", tooLongs: 1},
		{name: "a last line without newline", in: "a\nb", want: "a\nb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			r, peak := mcpserver.BoundedLines(strings.NewReader(tc.in), bound, func() error { n++; return nil })
			out, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("got %d bytes %.40q, want %d bytes %.40q", len(out), out, len(tc.want), tc.want)
			}
			if n != tc.tooLongs {
				t.Errorf("got %d lines reported too long, want %d", n, tc.tooLongs)
			}
			if p := peak(); p > bound+1 {
				t.Errorf("got %d bytes of a line held, want at most %d", p, bound+1)
			}
		})
	}
}
