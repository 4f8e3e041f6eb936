package admin

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/overlay"
)

// The operators' overrides through the API: POST /api/v1/backends/{action} (enable, disable,
// drain, force-up, clear; for ever or until an expiry, a drain now or from a scheduled start)
// applied to the backends a selector names and stored in the overlay, and GET
// /api/v1/overrides. CoreDNS-GSLB's enable and disable endpoints (compat.go) apply theirs the
// same way.

// ActionRequest is the body of POST /api/v1/backends/{action}: the backends, and the
// override's expiry and note.
type ActionRequest struct {
	Selector
	// Duration is how long the override lasts, as a Go duration (30m, 2h), from its start;
	// empty for ever.
	Duration string `json:"duration,omitempty"`
	// Starts schedules a drain: when it starts (RFC 3339, in the future); StartsIn is the
	// same as a Go duration from now. At most one of them, and only with drain.
	Starts   time.Time `json:"starts,omitzero"`
	StartsIn string    `json:"starts_in,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	// Force makes a change that the drain guard refuses (it would leave records below their
	// drain_guard); it needs a Reason, kept with the overrides beside the records it broke.
	Force bool `json:"force,omitempty"`
}

// ActionResult is the answer to an action: the backends it changed.
type ActionResult struct {
	Action   overlay.Action `json:"action"`
	Expires  time.Time      `json:"expires,omitzero"`
	Starts   time.Time      `json:"starts,omitzero"`
	Backends []Target       `json:"backends"`
}

// Target names a backend that an action changed.
type Target struct {
	Key     string `json:"key"`
	Zone    string `json:"zone"`
	Record  string `json:"record"`
	Address string `json:"address"`
	Port    int    `json:"port,omitempty"`
}

func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	action := overlay.Action(r.PathValue("action"))
	if action != overlay.Enable && action != overlay.Disable && action != overlay.Drain && action != overlay.ForceUp && action != overlay.Clear {
		writeError(w, http.StatusNotFound, fmt.Sprintf("unknown action %q: use enable, disable, drain, force-up or clear", action))
		return
	}
	var req ActionRequest
	if err := decodeJSON(r, &req); err != nil {
		fail(w, err)
		return
	}
	when, err := req.times(action, time.Now())
	if err != nil {
		fail(w, err)
		return
	}
	targets, err := s.apply(r.Context(), action, req.Selector, when, req.Reason, req.Force)
	if err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ActionResult{Action: action, Expires: when.expires, Starts: when.starts, Backends: targets})
}

// span is when an override starts (zero: now) and expires (zero: never).
type span struct{ starts, expires time.Time }

// times returns the start and the expiry that req asks for action at now: the duration
// counts from the start. Their problems are apiErrors; the store checks the rest.
func (req ActionRequest) times(action overlay.Action, now time.Time) (span, error) {
	var sp span
	parse := func(field, text string) (time.Duration, error) {
		d, err := time.ParseDuration(text)
		switch {
		case err != nil:
			return 0, errorf(http.StatusBadRequest, "%s: %v", field, err)
		case d <= 0:
			return 0, errorf(http.StatusBadRequest, "%s %s is not positive", field, d)
		}
		return d, nil
	}
	switch {
	case !req.Starts.IsZero() && req.StartsIn != "":
		return sp, errorf(http.StatusBadRequest, "give starts or starts_in, not both")
	case (!req.Starts.IsZero() || req.StartsIn != "") && action != overlay.Drain:
		return sp, errorf(http.StatusBadRequest, "only drain takes a start time, not %s", action)
	case req.StartsIn != "":
		d, err := parse("starts_in", req.StartsIn)
		if err != nil {
			return sp, err
		}
		sp.starts = now.Add(d).Truncate(time.Second)
	default:
		sp.starts = req.Starts
	}
	if req.Duration != "" {
		if action == overlay.Clear {
			return sp, errorf(http.StatusBadRequest, "clear takes no duration")
		}
		d, err := parse("duration", req.Duration)
		if err != nil {
			return sp, err
		}
		from := now
		if !sp.starts.IsZero() {
			from = sp.starts
		}
		sp.expires = from.Add(d).Truncate(time.Second)
	}
	return sp, nil
}

// apply sets the override action on every backend sel matches, all at once, through store
// (the drain guard, force). A selector that is empty, invalid, or matches nothing changes
// nothing and is an apiError.
func (s *Server) apply(ctx context.Context, action overlay.Action, sel Selector, when span, reason string, force bool) ([]Target, error) {
	if sel.empty() {
		return nil, errorf(http.StatusBadRequest, "empty selector: give keys, zone, record, location, address_prefix or tags")
	}
	m, err := sel.compile()
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "%v", err)
	}
	zones := s.status()
	if _, ok := findZone(zones, sel.Zone); sel.Zone != "" && !ok {
		return nil, errorf(http.StatusUnprocessableEntity, "zone %s is not served here", sel.Zone)
	}
	all := flatten(zones)
	if unknown := slices.DeleteFunc(slices.Clone(sel.Keys), func(k string) bool {
		return slices.ContainsFunc(all, func(b BackendStatus) bool { return b.Key == k })
	}); len(unknown) > 0 {
		return nil, errorf(http.StatusUnprocessableEntity, "no backend has key %s", strings.Join(unknown, ", "))
	}
	by := userOf(ctx)
	var targets []Target
	var changes []overlay.Change
	for _, b := range all {
		if m.match(b) {
			targets = append(targets, Target{Key: b.Key, Zone: b.Zone, Record: b.Record, Address: b.Address, Port: b.Port})
			changes = append(changes, overlay.Change{Key: b.Key, Action: action, Expires: when.expires, Starts: when.starts, Reason: reason, By: by})
		}
	}
	if len(changes) == 0 {
		return nil, errorf(http.StatusUnprocessableEntity, "no backend matches %s", sel)
	}
	if err := s.store(ctx, changes, force); err != nil {
		return nil, err
	}
	s.log.Infof("admin API: %s %s %d backends (%s)%s%s", cmp.Or(by, "anonymous"), action, len(changes), sel, fromText(when.starts), untilText(when.expires))
	return targets, nil
}

// fromText is " from <t>" for a scheduled start, empty for none.
func fromText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return " from " + t.Format(time.RFC3339)
}

func untilText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return " until " + t.Format(time.RFC3339)
}

func (s *Server) overrides(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, slices.DeleteFunc(s.settings.Load().store.List(), overlay.Override.IsShift))
}
