package usage

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The crash test's recorder: batches are written only when full (the flush interval is never
// reached), so the records written are always whole batches.
const (
	crashEnv     = "USAGE_CRASH_DB"
	crashRecords = 5025 // 100 full batches and 25 that never fill one
	crashQueue   = 500
	crashBatch   = 50
)

func crashRecord(i int, rec Record) Record {
	rec.KeyName = fmt.Sprintf("r%06d", i)
	return rec
}

// TestCrashChild is the process TestKillNine kills: it queues crashRecords records (flushing the
// queue when it has no room for the next batch, so none is dropped), says so on stdout and waits
// to be killed.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("run by TestKillNine")
	}
	s, err := Open(context.Background(), path, "")
	if err != nil {
		t.Fatal(err)
	}
	r := NewRecorder(s, Options{QueueSize: crashQueue, BatchSize: crashBatch, FlushInterval: time.Hour, Logger: quiet})
	for i, rec := range sample(crashRecords) {
		if i%crashBatch == 0 && r.q.Len() > crashQueue-crashBatch {
			// No room for the next batch: write what is queued, whole batches (i records were
			// queued, and the writer writes only full batches).
			if err := r.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if !r.enqueue(crashRecord(i, rec)) {
			t.Fatalf("record %d dropped", i)
		}
	}
	fmt.Printf("queued %d\n", crashRecords)
	<-time.After(time.Minute) // killed long before
	t.Error("not killed within a minute")
}

// TestKillNine: a process writing usage records to SQLite is killed with SIGKILL. Reopened, the
// database is not corrupt, holds every record of every batch written and nothing of a batch
// that was not (whole batches, in order), and lost at most what was not yet written: the queue
// and the batch being gathered, usage.queue_size + usage.batch_size records.
func TestKillNine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "usage.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	queued := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var lines []string
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "queued ") {
				queued <- sc.Text()
				return
			}
			lines = append(lines, sc.Text())
		}
		queued <- strings.Join(lines, "\n")
	}()
	select {
	case line := <-queued:
		if line != fmt.Sprintf("queued %d", crashRecords) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("child: got %q, want \"queued %d\"", line, crashRecords)
		}
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("child did not queue its records within 2 minutes")
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()

	s := openSQLite(t, path)
	defer s.Close()
	var check string
	if err := s.db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: got %q (%v), want ok", check, err)
	}
	rows, err := s.db.Query(`SELECT key_name FROM requests ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var written int
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("r%06d", written); name != want {
			t.Fatalf("request %d: got %s, want %s (records of written batches, in order)", written, name, want)
		}
		written++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	lost := crashRecords - written
	t.Logf("killed with %d of %d records written, %d lost (bound: queue %d + batch %d)", written, crashRecords, lost, crashQueue, crashBatch)
	if written%crashBatch != 0 {
		t.Errorf("got %d records, want whole batches of %d", written, crashBatch)
	}
	if lost > crashQueue+crashBatch {
		t.Errorf("lost %d records, want at most %d (queue + batch)", lost, crashQueue+crashBatch)
	}
	// Each written request's calls are there, and none of an unwritten one's.
	q := Query{Since: base.Add(-time.Hour), Until: base.Add(1000 * time.Hour)}
	recs := sample(crashRecords)[:written]
	for _, by := range []GroupBy{ByAgent, ByTool, ByModel} {
		q.GroupBy = by
		got, err := s.Query(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameRows(got.Rows, expect(recs, q)); err != nil {
			t.Errorf("by %s: %v", by, err)
		}
	}
}
