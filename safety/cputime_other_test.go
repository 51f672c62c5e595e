//go:build !unix

package safety

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
