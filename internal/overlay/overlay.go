// Package overlay holds the operators' overrides of backends: enable, disable, drain (now or
// from a start time) and force-up. An
// override is state kept beside the configuration, never an edit of the YAML files: the catalog
// serves a backend when its configuration enables it and no override disables it, or when an
// override enables it. A Store keeps the overrides, applies changes all or nothing, removes
// overrides whose expiry has passed, and tells its subscribers when anything changed.
//
// File is the store of a single instance (a JSON file written atomically); cluster mode keeps
// the same state in Redis behind the same interface.
package overlay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Action is what an override does to its backend.
type Action string

// The overrides, and Clear, which removes a backend's override in a Change.
const (
	// Enable serves the backend even when its configuration disables it.
	Enable Action = "enable"
	// Disable takes the backend out of every answer, fallback answers included.
	Disable Action = "disable"
	// Drain is Disable for planned maintenance, usually with an expiry: the dashboard and the
	// API show it apart from a plain Disable. A drain may start later (Override.Starts).
	Drain Action = "drain"
	// ForceUp serves the backend as healthy whatever its probes say: the operator knows it
	// works (and it is served even when its configuration disables it).
	ForceUp Action = "force-up"
	// Clear, in a Change, removes the backend's override: its configuration decides again.
	Clear Action = "clear"
	// Shift is not a backend's override but a staged shift of a record's weights (package
	// shift), kept beside the overrides so that it is shared, stored and announced as they
	// are: its Key is ShiftPrefix and the shift's id, its Data the shift.
	Shift Action = "shift"
)

// ShiftPrefix starts the key of a shift.
const ShiftPrefix = "shift|"

// Disables reports whether the action takes a backend out of the answers.
func (a Action) Disables() bool { return a == Disable || a == Drain }

// valid reports whether a may be stored as an override.
func (a Action) valid() bool { return a == Enable || a == ForceUp || a == Shift || a.Disables() }

// IsShift reports whether o is a staged shift rather than a backend's override.
func (o Override) IsShift() bool { return o.Action == Shift }

// Override is one backend's override.
type Override struct {
	// Key identifies the backend: "record|address|port", as the admin API lists it.
	Key    string `json:"key"`
	Action Action `json:"action"`
	// Expires is when the override is removed by itself; zero for never.
	Expires time.Time `json:"expires,omitzero"`
	// Starts is, for a scheduled drain, when it starts; zero for now. Before it the backend
	// is served as if it had no override (but its record's answers carry the drain TTL from
	// one record_ttl before it: see catalog.DrainTTL).
	Starts time.Time `json:"starts,omitzero"`
	// Reason is the operator's note.
	Reason string `json:"reason,omitempty"`
	// By is who set the override: the API user, or empty when the API has no authentication.
	By string `json:"by,omitempty"`
	// Forced is set when the override was forced past the drain guard of records it leaves
	// below their guard (drain_guard); Breaches says which, as they were when it was set.
	// A forced override always has a Reason.
	Forced   bool     `json:"forced,omitempty"`
	Breaches []string `json:"breaches,omitempty"`
	// Data is, for a shift (Action Shift), the shift itself, which package shift reads.
	Data json.RawMessage `json:"data,omitempty"`
	// Set is when the override was set.
	Set time.Time `json:"set"`
}

// Same reports whether o and p are the same override, set at the same time (their times
// compared as instants).
func (o Override) Same(p Override) bool {
	return o.Key == p.Key && o.Action == p.Action && o.Expires.Equal(p.Expires) && o.Starts.Equal(p.Starts) &&
		o.Reason == p.Reason && o.By == p.By && o.Set.Equal(p.Set) && o.Forced == p.Forced && slices.Equal(o.Breaches, p.Breaches) &&
		bytes.Equal(o.Data, p.Data)
}

// expired reports whether o has an expiry and it is not after now.
func (o Override) expired(now time.Time) bool {
	return !o.Expires.IsZero() && !now.Before(o.Expires)
}

// Pending reports whether o is a drain that has not started at now.
func (o Override) Pending(now time.Time) bool {
	return !o.Starts.IsZero() && now.Before(o.Starts)
}

// Change is one element of a Store.Apply: set the override of Key, or remove it with Clear.
type Change struct {
	Key    string
	Action Action
	// Expires is optional, and must be in the future; Clear takes none.
	Expires time.Time
	// Starts is optional, for Drain only: in the future, and before Expires.
	Starts time.Time
	Reason string
	By     string
	// Forced and Breaches are kept with the override (Override.Forced); Forced requires a
	// Reason.
	Forced   bool
	Breaches []string
	// Data is a shift's, for Action Shift.
	Data json.RawMessage
}

// override returns the override that c sets, set at now.
func (c Change) override(now time.Time) Override {
	return Override{Key: c.Key, Action: c.Action, Expires: c.Expires, Starts: c.Starts, Reason: c.Reason, By: c.By,
		Forced: c.Forced, Breaches: c.Breaches, Data: c.Data, Set: now}
}

// ErrInvalid is wrapped by the errors of Apply about the changes themselves (as opposed to a
// failure to store them), so that callers can tell the two apart.
var ErrInvalid = errors.New("invalid override")

// Store keeps the overrides of one Meridian instance, or of a cluster of them.
type Store interface {
	// Get returns the override of the backend key, if it has one that has not expired.
	Get(key string) (Override, bool)
	// List returns every override that has not expired, sorted by key.
	List() []Override
	// Apply makes every change or none: an invalid change (its error wraps ErrInvalid) or a
	// failure to store the result leaves the overrides as they were. When Apply returns, the
	// subscribers have been told.
	Apply(ctx context.Context, changes []Change) error
	// Subscribe calls fn after every change of the overrides, including an override that
	// expired and a scheduled drain that started, and returns a function that ends the subscription. fn runs on the goroutine that
	// made the change, possibly on several at once; it should read the store again and be quick.
	Subscribe(fn func()) (cancel func())
	// Start begins following the overrides that other processes change, when the store is
	// shared (Redis); it does nothing for a store of this process alone. Calls after the first
	// do nothing. Get and List answer before it, with the overrides read when it was opened.
	Start()
	// Close stops the expiry of overrides. The store must not be used afterwards.
	Close() error
}

// Clock is the time source of a store: the system clock, or a fake one in tests.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f on its own goroutine once d has passed, unless stopped before.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call of Clock.AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not started, and reports whether it did.
	Stop() bool
}

// SystemClock is the Clock of the time package.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// validate checks changes against the time now, and returns the first problem found.
func validate(changes []Change, now time.Time) error {
	seen := make(map[string]bool, len(changes))
	for _, c := range changes {
		switch {
		case c.Key == "":
			return fmt.Errorf("%w: empty backend key", ErrInvalid)
		case seen[c.Key]:
			return fmt.Errorf("%w: backend %s is changed twice", ErrInvalid, c.Key)
		case c.Action != Clear && !c.Action.valid():
			return fmt.Errorf("%w: backend %s: unknown action %q (valid: enable, disable, drain, force-up, clear, shift)", ErrInvalid, c.Key, c.Action)
		case c.Action == Clear && !c.Expires.IsZero():
			return fmt.Errorf("%w: backend %s: clear takes no expiry", ErrInvalid, c.Key)
		case !c.Expires.IsZero() && !c.Expires.After(now):
			return fmt.Errorf("%w: backend %s: expiry %s is not in the future", ErrInvalid, c.Key, c.Expires.Format(time.RFC3339))
		case !c.Starts.IsZero() && c.Action != Drain:
			return fmt.Errorf("%w: backend %s: only a drain takes a start time, not %s", ErrInvalid, c.Key, c.Action)
		case !c.Starts.IsZero() && !c.Starts.After(now):
			return fmt.Errorf("%w: backend %s: drain start %s is not in the future", ErrInvalid, c.Key, c.Starts.Format(time.RFC3339))
		case c.Action != Clear && (c.Action == Shift) != strings.HasPrefix(c.Key, ShiftPrefix) || c.Action == Shift && len(c.Data) == 0:
			return fmt.Errorf("%w: %s: a shift, and only a shift, has a key starting %q and data", ErrInvalid, c.Key, ShiftPrefix)
		case c.Forced && strings.TrimSpace(c.Reason) == "":
			return fmt.Errorf("%w: backend %s: a forced change needs a reason", ErrInvalid, c.Key)
		case !c.Starts.IsZero() && !c.Expires.IsZero() && !c.Starts.Before(c.Expires):
			return fmt.Errorf("%w: backend %s: drain start %s is not before its expiry %s", ErrInvalid, c.Key, c.Starts.Format(time.RFC3339), c.Expires.Format(time.RFC3339))
		}
		seen[c.Key] = true
	}
	return nil
}
