package npmservers

import "testing"

// TestDirSkipsWithoutNode: on a machine without Node.js the tests that need the reference servers
// are skipped, saying why, rather than failed (outside CI: with CI=true they fail).
func TestDirSkipsWithoutNode(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // an empty directory: no node, no npm
	t.Setenv("CI", "")
	var skipped bool
	t.Run("without node", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Dir(t)
		t.Error("Dir returned without node, want the test skipped")
	})
	if !skipped {
		t.Errorf("got the test not skipped, want it skipped with %q", skipMessage)
	}
}
