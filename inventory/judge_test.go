package inventory

import (
	"errors"
	"slices"
	"testing"
)

// TestJudge: what each policy makes of a definition, given what it is compared with.
func TestJudge(t *testing.T) {
	down := errors.New("database is down")
	pol := func(pin PinPolicy, scan ScanPolicy) Checks {
		return Checks{Pin: pin, Scan: scan}
	}
	const now = "new"
	tests := []struct {
		name        string
		pol         Checks
		p           pinState
		flagged     bool
		wantChanged bool
		want        []QuarantineReason
	}{
		{"first seen", pol(PinQuarantine, ScanQuarantine), pinState{pinned: now}, false, false, nil},
		{"unchanged, flagged, not approved", pol(PinQuarantine, ScanQuarantine), pinState{pinned: now}, true, false,
			[]QuarantineReason{ReasonFindings}},
		{"flagged, approved", pol(PinQuarantine, ScanQuarantine), pinState{pinned: now, approved: now}, true, false, nil},
		{"flagged, an older definition approved", pol(PinWarn, ScanQuarantine), pinState{pinned: "old", approved: "old"}, true, true,
			[]QuarantineReason{ReasonFindings}},
		{"changed, warn", pol(PinWarn, ScanWarn), pinState{pinned: "old"}, true, true, nil},
		{"changed, quarantine", pol(PinQuarantine, ScanStrip), pinState{pinned: "old"}, true, true,
			[]QuarantineReason{ReasonPinChanged}},
		{"changed and flagged", pol(PinQuarantine, ScanQuarantine), pinState{pinned: "old"}, true, true,
			[]QuarantineReason{ReasonPinChanged, ReasonFindings}},
		{"changed, pin off", pol(PinOff, ScanWarn), pinState{pinned: "old"}, false, false, nil},
		{"store down, warn", pol(PinWarn, ScanWarn), pinState{err: down}, false, false, nil},
		{"store down, quarantine", pol(PinQuarantine, ScanWarn), pinState{err: down}, false, false,
			[]QuarantineReason{ReasonPinUnverified}},
		{"store down, configured pin matches", pol(PinQuarantine, ScanWarn), pinState{pinned: now, fromConfig: true, err: down}, false, false, nil},
		{"store down, flagged", pol(PinOff, ScanQuarantine), pinState{err: down}, true, false,
			[]QuarantineReason{ReasonFindings}},
		{"configured pin differs", pol(PinQuarantine, ScanWarn), pinState{pinned: "cfg", fromConfig: true}, false, true,
			[]QuarantineReason{ReasonPinChanged}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := judge(tc.pol, now, tc.p, tc.flagged)
			if v.changed != tc.wantChanged || !slices.Equal(v.reasons, tc.want) {
				t.Errorf("got changed %v, reasons %v; want %v, %v", v.changed, v.reasons, tc.wantChanged, tc.want)
			}
		})
	}
}
