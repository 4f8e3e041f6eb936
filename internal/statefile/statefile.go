// Package statefile is the state file of standalone mode, the persistence of a block's health
// manager: read when the manager is made (its seed, so that an instance's first answers follow
// the last known health instead of the fallback policy of unknown backends), and written by a
// publisher (Writer) periodically and at shutdown: the health of every probed backend.
//
// The file is JSON: a version, the time it was written, and per backend key the status with
// the record and backend it names (for people reading it). Read also takes the file that
// CoreDNS-GSLB writes (an object of "fqdn|address" keys), so that a migrated instance keeps its
// view across the switch.
package statefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/atomicfile"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/health"
)

// Version is the version of the format Write writes and Read reads.
const Version = 1

// File is the content of a state file.
type File struct {
	Version int `json:"version"`
	// WrittenAt is when the state was taken; its age decides whether Read uses it.
	WrittenAt time.Time `json:"written_at"`
	// Backends holds the probed backends that were up or down, by key (record|address|port).
	Backends map[string]Entry `json:"backends"`
	// Handover is, in a file written for the process that replaces the writer in a binary
	// upgrade, the writer's PID: the new process, whose parent that is, waits for it.
	Handover int `json:"handover,omitempty"`
}

// Entry is one backend of a state file.
type Entry struct {
	// Record and Backend name the backend, for people; Read uses the key only.
	Record  string `json:"record"`
	Backend string `json:"backend"`
	// Status is "up" or "down".
	Status string `json:"status"`
	// LastCheck is when the last result arrived, LastChange when the status last changed.
	LastCheck  time.Time `json:"last_check,omitzero"`
	LastChange time.Time `json:"last_change,omitzero"`
	// AsOf, when set, is when Status was last known, earlier than the file's WrittenAt: the
	// status was restored from an older file and no probe has confirmed it since. Its age, not
	// the file's, decides whether Read uses it, so that restarts quicker than the probes cannot
	// keep an old status alive.
	AsOf time.Time `json:"as_of,omitzero"`
}

// Source is what the state is taken from: the health manager.
type Source interface {
	Details() map[string]health.Details
}

// Take returns the state of the sources at now: every backend that is up or down; a key that
// several sources hold takes the later source's. restored (nil for none) is what the sources
// were seeded with at start. A backend without a result yet is written only with its restored
// status and the time that was known (Entry.AsOf). The restored statuses of keys no source
// holds are written too, with their times: a start that fails before the configuration is
// loaded, or a zone that is missing for a while, must not wipe the file. Read drops them once
// they are older than the maximum age.
func Take(now time.Time, restored *Loaded, sources ...Source) *File {
	f := &File{Version: Version, WrittenAt: now.UTC(), Backends: make(map[string]Entry)}
	if restored != nil {
		for key, st := range restored.States {
			f.Backends[key] = Entry{Status: st.String(), AsOf: restored.AsOf[key].UTC()}
		}
	}
	for _, src := range sources {
		for key, d := range src.Details() {
			if d.LastCheck.IsZero() { // no result here yet: at most what was restored
				if e, ok := f.Backends[key]; ok && e.Record == "" {
					e.Record, e.Backend = d.Record, d.Backend
					f.Backends[key] = e
				}
				continue
			}
			f.Backends[key] = Entry{Record: d.Record, Backend: d.Backend, Status: d.Status.String(),
				LastCheck: d.LastCheck.UTC(), LastChange: d.LastChange.UTC()}
		}
	}
	for key, e := range f.Backends {
		if e.Status == health.Unknown.String() {
			delete(f.Backends, key) // as good as absent: it would start unknown anyway
		}
	}
	return f
}

// Write replaces the file at path with f atomically (see atomicfile).
func Write(path string, f *File) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state file: %w", err)
	}
	if err := atomicfile.Write(path, append(data, '\n')); err != nil {
		return fmt.Errorf("write state file: %w", err)
	}
	return nil
}

// Loaded is what Read found in a state file.
type Loaded struct {
	// States holds the status of each backend the file names, by key, and AsOf when each was
	// known (WrittenAt, or the entry's as_of).
	States map[string]health.Status
	AsOf   map[string]time.Time
	// WrittenAt is when the state was taken (the file's modification time for
	// CoreDNS-GSLB's file, which does not say).
	WrittenAt time.Time
	// Format is "meridian" or "coredns-gslb".
	Format string
	// Handover is the file's handover PID (File.Handover); 0 for none.
	Handover int
}

// StaleError is Read's error for a file older than the maximum age.
type StaleError struct {
	Path        string
	Age, MaxAge time.Duration
}

// Error implements error.
func (e *StaleError) Error() string {
	return fmt.Sprintf("state file %s is %s old, older than state_max_age %s: not used", e.Path, e.Age.Round(time.Second), e.MaxAge)
}

// Read returns the states of the file at path, if it was written at most maxAge before now.
// A missing file is an error satisfying errors.Is(err, fs.ErrNotExist); a file too old is a
// *StaleError; a file that cannot be parsed is an error naming it.
func Read(path string, maxAge time.Duration, now time.Time) (*Loaded, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read state file: %w", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("state file %s is corrupt: %w", path, err)
	}
	var l *Loaded
	if _, ours := top["version"]; ours {
		l, err = parse(data)
	} else {
		l, err = parseCoreDNSGSLB(path, top)
	}
	if err != nil {
		return nil, fmt.Errorf("state file %s is corrupt: %w", path, err)
	}
	if age := now.Sub(l.WrittenAt); age > maxAge {
		return nil, &StaleError{Path: path, Age: age, MaxAge: maxAge}
	}
	for key, at := range l.AsOf {
		if now.Sub(at) > maxAge {
			delete(l.States, key)
			delete(l.AsOf, key)
		}
	}
	return l, nil
}

func newLoaded(writtenAt time.Time, format string) *Loaded {
	return &Loaded{States: make(map[string]health.Status), AsOf: make(map[string]time.Time), WrittenAt: writtenAt, Format: format}
}

// add notes the status of key, known at asOf (zero: when the file was written).
func (l *Loaded) add(key string, st health.Status, asOf time.Time) {
	if asOf.IsZero() || asOf.After(l.WrittenAt) {
		asOf = l.WrittenAt
	}
	l.States[key], l.AsOf[key] = st, asOf
}

// parse reads Meridian's format: up, down, and stale (another site's backend whose site was
// silent: it restarts stale, served only when nothing else is, until its site is read).
// Entries of other statuses are skipped.
func parse(data []byte) (*Loaded, error) {
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if f.Version != Version {
		return nil, fmt.Errorf("version %d is not %d", f.Version, Version)
	}
	if f.WrittenAt.IsZero() {
		return nil, errors.New("written_at is missing")
	}
	l := newLoaded(f.WrittenAt, "meridian")
	l.Handover = f.Handover
	for key, e := range f.Backends {
		switch e.Status {
		case health.Up.String():
			l.add(key, health.Up, e.AsOf)
		case health.Down.String():
			l.add(key, health.Down, e.AsOf)
		case health.Stale.String():
			l.add(key, health.Stale, e.AsOf)
		}
	}
	return l, nil
}

// cgEntry is one backend of CoreDNS-GSLB's state file.
type cgEntry struct {
	Status    string    `json:"status"` // healthy or unhealthy
	LastCheck time.Time `json:"last_check"`
}

// parseCoreDNSGSLB reads CoreDNS-GSLB's format: "fqdn|address" keys. Its backends have no port
// of their own, so each key is the Meridian key with port 0. It calls every backend that is not
// up "unhealthy", checked or not: those never checked are skipped (they start unknown), as are
// keys and statuses it does not know.
func parseCoreDNSGSLB(path string, top map[string]json.RawMessage) (*Loaded, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	l := newLoaded(fi.ModTime(), "coredns-gslb")
	for key, raw := range top {
		var e cgEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("backend %s: %w", key, err)
		}
		record, addr, ok := strings.Cut(key, "|")
		if !ok || strings.Contains(addr, "|") || e.LastCheck.IsZero() {
			continue
		}
		// Meridian's keys spell addresses and names canonically.
		if ip, err := netip.ParseAddr(addr); err == nil {
			addr = ip.String()
		} else {
			addr = config.CanonicalName(addr)
		}
		key = config.CanonicalName(record) + "|" + addr + "|0"
		switch e.Status {
		case "healthy":
			l.add(key, health.Up, time.Time{})
		case "unhealthy":
			l.add(key, health.Down, time.Time{})
		}
	}
	return l, nil
}
