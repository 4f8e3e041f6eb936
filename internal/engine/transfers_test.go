package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/axfr"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/testutil"
)

// TestNotifyIsSentAgainUntilTaken: a zone's NOTIFY that its secondaries did not take is sent
// again at the next checks, until one is taken, and at most axfr.NotifyAttempts times for one
// change; giving up is logged once.
func TestNotifyIsSentAgainUntilTaken(t *testing.T) {
	const transferCheck = 20 * time.Millisecond
	// Serial 1: the first check raises it to the time, which the test waits for.
	const zone = "soa: {mname: ns1.example.org., rname: hostmaster.example.org., serial: 1}\n" +
		"records:\n  www.example.org.: {backends: [{address: 10.0.0.1}]}\n"
	for _, tt := range []struct {
		name      string
		failures  int32 // the first attempts that fail
		wantCalls int32
		gaveUp    int
	}{
		{"taken at the third attempt", 2, 3, 0},
		{"never taken", 1 << 30, axfr.NotifyAttempts, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "zone.yml")
			if err := os.WriteFile(file, []byte(zone), 0o644); err != nil {
				t.Fatal(err)
			}
			opts := config.DefaultOptions()
			opts.Zones = []config.ZoneSource{{Origin: "example.org.", File: file}}
			log := &testutil.Log{}
			e, err := New(opts, log)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Stop()
			e.transferCheck = transferCheck
			var calls atomic.Int32
			e.EnableTransfers(func(origin string) error {
				if origin != "example.org." {
					t.Errorf("notified %q", origin)
				}
				if calls.Add(1) <= tt.failures {
					return errors.New("no secondary answered")
				}
				return nil
			})
			// The first check gives the zone its serial (the time, from the file's 1): a change
			// before it would be the zone's first sight, which notifies nothing.
			start := uint32(time.Now().Unix())
			testutil.Eventually(t, 5*time.Second, func() bool { return e.Snapshot().ZoneOf("example.org.").Serial() >= start },
				"the zone's serial was not set by a check")
			if err := os.WriteFile(file, []byte(zone+"  api.example.org.: {backends: [{address: 10.0.0.2}]}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := e.Reload(); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, 5*time.Second, func() bool { return calls.Load() >= tt.wantCalls },
				"%s NOTIFY attempts, want %d", func() string { return fmt.Sprint(calls.Load()) }, tt.wantCalls)
			time.Sleep(10 * transferCheck) // ten checks more, which must send none
			if n := calls.Load(); n != tt.wantCalls {
				t.Errorf("%d NOTIFY attempts, want %d", n, tt.wantCalls)
			}
			if n := log.Count("gave up after"); n != tt.gaveUp {
				t.Errorf("%d logs of giving up, want %d:\n%s", n, tt.gaveUp, log)
			}
		})
	}
}
