package approval_test

import (
	"testing"

	"toolrouter/approval"
	"toolrouter/approval/storetest"
)

// TestMemoryListing: Memory lists held calls, gives them back by key and keeps decisions.
func TestMemoryListing(t *testing.T) { storetest.Listing(t, approval.NewMemory()) }
