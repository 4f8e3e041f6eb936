package admin

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Timelines returned when the request does not say, and at most.
const (
	defaultTimelines = 50
	maxTimelines     = 1000
)

// TimelineProvider is a Provider that keeps its records' failover timelines, for GET
// /api/v1/timelines and the dashboard.
type TimelineProvider interface {
	// Timelines returns the timelines of record (every record's when empty), the newest
	// first, at most limit.
	Timelines(record string, limit int) []Timeline
}

// Timeline is one backend transition followed to its first answer (docs/api.md, "Failover
// timelines").
type Timeline struct {
	Record  string `json:"record"`
	Backend string `json:"backend"`
	Key     string `json:"key"`
	From    State  `json:"from"`
	To      State  `json:"to"`
	Reason  string `json:"reason,omitempty"`
	// Detected is when the evidence began (the first probe of the run that changed the state,
	// or a source's report); Changed when the state changed; Swapped when the record's view
	// holding it was swapped in; Answered when its first answer went out. Swapped and Answered
	// are absent until they happen.
	Detected time.Time  `json:"detected"`
	Changed  time.Time  `json:"changed"`
	Swapped  *time.Time `json:"swapped,omitempty"`
	Answered *time.Time `json:"answered,omitempty"`
	// Learned are when other sites and instances learned it.
	Learned []Learned `json:"learned,omitempty"`
	// Measured is Answered − Detected, absent before the answer; Target the record's
	// failover_target, absent without one.
	Measured Millis `json:"measured_ms,omitempty"`
	Target   Millis `json:"target_ms,omitempty"`
	// Superseded is set when a later change of the record came before this one's answer.
	Superseded bool `json:"superseded,omitempty"`
}

// Learned is when another site or instance learned a change.
type Learned struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// timelines answers GET /api/v1/timelines[?record=NAME][&limit=N]: the failover timelines of
// every block, the newest first.
func (s *Server) timelines(w http.ResponseWriter, r *http.Request) {
	limit := defaultTimelines
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "limit must be a positive integer")
			return
		}
		limit = min(n, maxTimelines)
	}
	record := strings.TrimSpace(r.URL.Query().Get("record"))
	if record != "" && !strings.HasSuffix(record, ".") {
		record += "."
	}
	out := []Timeline{}
	for _, reg := range s.active() {
		if tp, ok := reg.p.(TimelineProvider); ok {
			out = append(out, tp.Timelines(record, limit)...)
		}
	}
	slices.SortFunc(out, func(a, b Timeline) int { return cmp.Compare(b.Changed.UnixNano(), a.Changed.UnixNano()) })
	writeJSON(w, http.StatusOK, out[:min(len(out), limit)])
}
