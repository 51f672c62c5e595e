//go:build unix

package server

import "syscall"

// peek looks at the socket without taking anything from it: ready is false while there is nothing
// to see (the caller waits for the poller), gone true when the peer closed or reset it.
func peek(fd uintptr) (ready, gone bool) {
	var b [1]byte
	for {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
			return false, false
		}
		return true, err != nil || n == 0
	}
}
