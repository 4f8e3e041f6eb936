package admin

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/overlay"
	"github.com/meridian-gslb/meridian/internal/shift"
)

// The staged shifts through the API: POST /api/v1/shifts starts one, GET /api/v1/shifts lists
// them, POST /api/v1/shifts/{id}/cancel ends one (the record's configured weights serve
// again). A shift is kept in the overrides store, and every change of it goes through
// Server.store, as the overrides' do.

// The defaults of a ShiftRequest.
var (
	DefaultShiftSteps = []float64{10, 25, 50, 100}
	DefaultShiftEvery = 5 * time.Minute
)

// ShiftProvider is a Provider that moves its records' traffic in staged shifts.
type ShiftProvider interface {
	// CheckShift reports whether the block serves the record of s and, when it does, what
	// is wrong with s for it (nil: nothing).
	CheckShift(s *shift.Shift) (serves bool, err error)
	// ShiftNotes returns what the block's controller last noted of each shift, by id: the
	// signal's last value, or why the shift waits.
	ShiftNotes() map[string]string
}

// ShiftRequest is the body of POST /api/v1/shifts.
type ShiftRequest struct {
	Record string   `json:"record"`
	From   []string `json:"from"`
	To     []string `json:"to"`
	// Steps are the percentages of the From and To backends' weight on To at each step
	// (DefaultShiftSteps when empty); Every the time each step holds, a Go duration
	// (DefaultShiftEvery when empty).
	Steps  []float64     `json:"steps,omitempty"`
	Every  string        `json:"every,omitempty"`
	Signal *shift.Signal `json:"signal,omitempty"`
	Reason string        `json:"reason,omitempty"`
}

// ShiftStatus is a shift as the API lists it: the shift, its share on To now, and what its
// controller last noted.
type ShiftStatus struct {
	shift.Shift
	Share float64 `json:"share"`
	Note  string  `json:"note,omitempty"`
}

// shiftOf returns the shift req asks for, started at now by by, unchecked.
func shiftOf(req ShiftRequest, by string, now time.Time) (*shift.Shift, error) {
	s := &shift.Shift{ID: strings.ToLower(rand.Text()[:10]), Record: config.CanonicalName(req.Record), From: req.From, To: req.To,
		Every: shift.Duration(DefaultShiftEvery), Signal: req.Signal, Reason: req.Reason, By: by,
		State: shift.Running, StepStarted: now}
	if req.Every != "" {
		d, err := config.ParseDuration(req.Every)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "every: %v", err)
		}
		s.Every = shift.Duration(d)
	}
	steps := req.Steps
	if len(steps) == 0 {
		steps = DefaultShiftSteps
	}
	for _, p := range steps {
		s.Steps = append(s.Steps, p/100)
	}
	s.History = []shift.Event{{Time: now, Step: 0, Share: s.Share(), What: "started"}}
	return s, nil
}

func (s *Server) startShift(w http.ResponseWriter, r *http.Request) {
	var req ShiftRequest
	if err := decodeJSON(r, &req); err != nil {
		fail(w, err)
		return
	}
	if req.Record == "" {
		writeError(w, http.StatusBadRequest, "record is required")
		return
	}
	by := userOf(r.Context())
	sh, err := shiftOf(req, by, time.Now())
	if err != nil {
		fail(w, err)
		return
	}
	served := false
	for _, reg := range s.active() {
		sp, ok := reg.p.(ShiftProvider)
		if !ok {
			continue
		}
		serves, err := sp.CheckShift(sh)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		served = served || serves
	}
	if !served {
		writeError(w, http.StatusNotFound, fmt.Sprintf("record %s is served by no block here", sh.Record))
		return
	}
	for _, other := range shift.FromOverrides(s.settings.Load().store.List()) {
		if other.Record == sh.Record {
			writeError(w, http.StatusConflict, fmt.Sprintf("record %s has shift %s already: cancel it first", sh.Record, other.ID))
			return
		}
	}
	change, err := sh.Change()
	if err == nil {
		change.By = by
		err = s.store(r.Context(), []overlay.Change{change}, false)
	}
	if err != nil {
		fail(w, err)
		return
	}
	s.log.Infof("admin API: %s started shift %s of %s from %v to %v: %v every %s", cmp.Or(by, "anonymous"), sh.ID, sh.Record, sh.From, sh.To, req.Steps, time.Duration(sh.Every))
	writeJSON(w, http.StatusCreated, ShiftStatus{Shift: *sh, Share: sh.Share()})
}

// shiftStatuses returns the shifts of the store with their controllers' notes, by record.
func (s *Server) shiftStatuses() []ShiftStatus {
	notes := map[string]string{}
	for _, reg := range s.active() {
		if sp, ok := reg.p.(ShiftProvider); ok {
			for id, n := range sp.ShiftNotes() {
				notes[id] = n
			}
		}
	}
	out := []ShiftStatus{}
	for _, sh := range shift.FromOverrides(s.settings.Load().store.List()) {
		out = append(out, ShiftStatus{Shift: *sh, Share: sh.Share(), Note: notes[sh.ID]})
	}
	slices.SortFunc(out, func(a, b ShiftStatus) int { return cmp.Or(cmp.Compare(a.Record, b.Record), cmp.Compare(a.ID, b.ID)) })
	return out
}

func (s *Server) shifts(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.shiftStatuses())
}

func (s *Server) cancelShift(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	i := slices.IndexFunc(s.shiftStatuses(), func(st ShiftStatus) bool { return st.ID == id })
	if i < 0 {
		writeError(w, http.StatusNotFound, "no shift "+id)
		return
	}
	if err := s.store(r.Context(), []overlay.Change{{Key: overlay.ShiftPrefix + id, Action: overlay.Clear, By: userOf(r.Context())}}, false); err != nil {
		fail(w, err)
		return
	}
	s.log.Infof("admin API: %s cancelled shift %s", cmp.Or(userOf(r.Context()), "anonymous"), id)
	writeJSON(w, http.StatusOK, map[string]string{"cancelled": id})
}
