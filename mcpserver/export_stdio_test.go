package mcpserver

import "io"

// BoundedLines is the reader ServeStdio wraps stdin in, and the most bytes of a line it ever held.
func BoundedLines(r io.Reader, max int, tooLong func() error) (io.Reader, func() int) {
	b := newBoundedLines(r, max, tooLong)
	return b, func() int { return b.peak }
}
