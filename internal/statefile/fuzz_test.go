package statefile

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/meridian-gslb/meridian/internal/health"
)

// FuzzRead feeds arbitrary files to Read, in Meridian's format and CoreDNS-GSLB's: it must
// never panic, and a file it accepts yields only up and down states, none known later than the
// file was written.
func FuzzRead(f *testing.F) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, seed := range []string{
		`{"version": 1, "written_at": "2026-12-01T09:59:50Z", "backends": {"www.example.org.|192.0.2.1|0": {"status": "up"}}}`,
		`{"version": 1, "written_at": "2026-12-01T09:59:50Z", "backends": {"k": {"status": "down", "as_of": "2026-12-01T11:00:00Z"}}}`,
		`{"version": 2, "written_at": "2026-12-01T09:59:50Z"}`,
		`{"www.example.org.|192.0.2.1": {"status": "healthy", "last_check": "2026-12-01T09:59:00Z"}}`,
		`{"www.example.org.|192.0.2.1": {"status": "unhealthy", "last_check": "0001-01-01T00:00:00Z"}}`,
		`{}`, `[]`, `null`,
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "state.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// The CoreDNS-GSLB format takes its age from the file's time.
		if err := os.Chtimes(path, now, now); err != nil {
			t.Fatal(err)
		}
		l, err := Read(path, time.Hour, now)
		if err != nil {
			return
		}
		for key, st := range l.States {
			if st != health.Up && st != health.Down {
				t.Fatalf("%s: status %v from %q", key, st, data)
			}
			if at := l.AsOf[key]; at.After(l.WrittenAt) {
				t.Fatalf("%s: known at %v, after the file was written (%v)", key, at, l.WrittenAt)
			}
		}
	})
}
