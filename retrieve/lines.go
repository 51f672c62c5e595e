package retrieve

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// lineFile is a JSON Lines file that a store loads once, appends records to, and rewrites with
// only what it keeps: the examples, the vector cache and the generated examples. A zero path keeps
// nothing on disk; every method is then a no-op. Its owner serialises the calls.
type lineFile struct {
	path string
	what string   // "examples", "vector cache", …: for errors
	file *os.File // open for appending; nil without a path or after close
	n    int      // records in the file
}

// load calls each with every complete line of the file (none when it does not exist), counting
// those each accepts, and reports whether any line was unreadable or cut short (a crash while
// appending): the caller then rewrites the file, so that appends start on a line of their own.
func (f *lineFile) load(each func(line []byte) bool) (damaged bool, err error) {
	if f.path == "" {
		return false, nil
	}
	file, err := os.Open(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", f.what, err)
	}
	defer file.Close()
	r := bufio.NewReaderSize(file, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] == '\n' && each(line) {
				f.n++
			} else {
				damaged = true
			}
		}
		if errors.Is(err, io.EOF) {
			return damaged, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading %s: %w", f.what, err)
		}
	}
}

// open opens the file for appending, creating it.
func (f *lineFile) open() error {
	if f.path == "" {
		return nil
	}
	file, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("opening %s: %w", f.what, err)
	}
	f.file = file
	return nil
}

// append writes records, each a line ending in '\n', holding n records.
func (f *lineFile) append(records []byte, n int) error {
	if f.file == nil || len(records) == 0 {
		return nil
	}
	if _, err := f.file.Write(records); err != nil {
		return fmt.Errorf("writing %s: %w", f.what, err)
	}
	f.n += n
	return nil
}

// rewrite replaces the file with the records write emits (each a line ending in '\n'), through a
// temporary file and a rename, so that a crash leaves the old file or the new one, and reopens it
// for appending.
func (f *lineFile) rewrite(write func(emit func(record []byte))) error {
	if f.path == "" {
		return nil
	}
	f.close()
	tmp, err := os.CreateTemp(filepath.Dir(f.path), filepath.Base(f.path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("rewriting %s: %w", f.what, err)
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriterSize(tmp, 64<<10)
	n := 0
	write(func(record []byte) {
		w.Write(record)
		n++
	})
	if err := w.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("rewriting %s: %w", f.what, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("rewriting %s: %w", f.what, err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("rewriting %s: %w", f.what, err)
	}
	f.n = n
	return f.open()
}

// close closes the file; appends are dropped from then on.
func (f *lineFile) close() error {
	if f.file == nil {
		return nil
	}
	err := f.file.Close()
	f.file = nil
	if err != nil {
		return fmt.Errorf("closing %s: %w", f.what, err)
	}
	return nil
}
