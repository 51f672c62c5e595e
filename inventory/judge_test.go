package inventory

import (
	"errors"
	"slices"
	"testing"

	"toolrouter/config"
)

// TestJudge: what each policy makes of a definition, given what it is compared with.
func TestJudge(t *testing.T) {
	down := errors.New("database is down")
	pol := func(pin config.PinPolicy, scan config.ScanPolicy) config.Safety {
		return config.Safety{Pin: pin, Scan: scan}
	}
	const now = "new"
	tests := []struct {
		name        string
		pol         config.Safety
		p           pinState
		flagged     bool
		wantChanged bool
		want        []QuarantineReason
	}{
		{"first seen", pol(config.PinQuarantine, config.ScanQuarantine), pinState{pinned: now}, false, false, nil},
		{"unchanged, flagged, not approved", pol(config.PinQuarantine, config.ScanQuarantine), pinState{pinned: now}, true, false,
			[]QuarantineReason{ReasonFindings}},
		{"flagged, approved", pol(config.PinQuarantine, config.ScanQuarantine), pinState{pinned: now, approved: now}, true, false, nil},
		{"flagged, an older definition approved", pol(config.PinWarn, config.ScanQuarantine), pinState{pinned: "old", approved: "old"}, true, true,
			[]QuarantineReason{ReasonFindings}},
		{"changed, warn", pol(config.PinWarn, config.ScanWarn), pinState{pinned: "old"}, true, true, nil},
		{"changed, quarantine", pol(config.PinQuarantine, config.ScanStrip), pinState{pinned: "old"}, true, true,
			[]QuarantineReason{ReasonPinChanged}},
		{"changed and flagged", pol(config.PinQuarantine, config.ScanQuarantine), pinState{pinned: "old"}, true, true,
			[]QuarantineReason{ReasonPinChanged, ReasonFindings}},
		{"changed, pin off", pol(config.PinOff, config.ScanWarn), pinState{pinned: "old"}, false, false, nil},
		{"store down, warn", pol(config.PinWarn, config.ScanWarn), pinState{err: down}, false, false, nil},
		{"store down, quarantine", pol(config.PinQuarantine, config.ScanWarn), pinState{err: down}, false, false,
			[]QuarantineReason{ReasonPinUnverified}},
		{"store down, configured pin matches", pol(config.PinQuarantine, config.ScanWarn), pinState{pinned: now, fromConfig: true, err: down}, false, false, nil},
		{"store down, flagged", pol(config.PinOff, config.ScanQuarantine), pinState{err: down}, true, false,
			[]QuarantineReason{ReasonFindings}},
		{"configured pin differs", pol(config.PinQuarantine, config.ScanWarn), pinState{pinned: "cfg", fromConfig: true}, false, true,
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
