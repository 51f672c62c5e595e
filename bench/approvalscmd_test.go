package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseWaiting(t *testing.T) {
	out := "goos: linux\nBenchmarkWaitingRoutes-2   \t       1\t         0 ns/op\t      1000 routes\t     0.1300 cpu-ms/s-waiting\t     0.1100 cpu-ms/s-idle\t     12288 bytes/waiting-route\nPASS\n"
	runs, err := parseWaiting(out)
	if err != nil || len(runs) != 1 {
		t.Fatalf("got %v, %v; want one run", runs, err)
	}
	if r := runs[0]; r.Routes != 1000 || r.PerRoute != 12288 || r.CPUMsPS != 0.13 || r.IdleMsPS != 0.11 {
		t.Errorf("got %+v", r)
	}
	if _, err := parseWaiting("BenchmarkWaitingRoutes-2 1 0 ns/op 1000 routes\n"); err == nil {
		t.Error("a line without its figures parsed")
	}
	md := waitingMarkdown("go run ./bench approvals", time.Unix(0, 0), runs)
	if !strings.Contains(md, "| 1 | 1000 | 12.0 | 11.7 | 0.13 | 0.11 |") {
		t.Errorf("markdown:\n%s", md)
	}
}
