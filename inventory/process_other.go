//go:build !unix

package inventory

import (
	"os"
	"os/exec"
)

// Without process groups only the server itself can be stopped.
var (
	sigTerm = os.Kill
	sigKill = os.Kill
)

func ownGroup(*exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, sig os.Signal) {
	if cmd.Process != nil {
		_ = cmd.Process.Signal(sig)
	}
}
