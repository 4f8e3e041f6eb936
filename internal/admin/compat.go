package admin

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// The endpoints of CoreDNS-GSLB's API, for the scripts written against it: GET /api/overview,
// GET /api/overview/{zone}, POST /api/backends/enable and /disable, GET /api/v1/status, and
// PUT /api/v1/zones/{zone}/records/{fqdn}/backends. Their shapes are
// CoreDNS-GSLB's; the versioned API has more.

// Health words of CoreDNS-GSLB's overview.
const (
	compatHealthy   = "healthy"
	compatUnhealthy = "unhealthy"
)

// compatRecord is a record in CoreDNS-GSLB's overview.
type compatRecord struct {
	Zone     string          `json:"zone"`
	Record   string          `json:"record"`
	Status   string          `json:"status"`
	Backends []compatBackend `json:"backends"`
}

// compatBackend is a backend in CoreDNS-GSLB's overview.
type compatBackend struct {
	Address         string `json:"address"`
	Alive           string `json:"alive"`
	LastHealthcheck string `json:"last_healthcheck"`
}

func health(ok bool) string {
	if ok {
		return compatHealthy
	}
	return compatUnhealthy
}

func compatRecords(z Zone) []compatRecord {
	out := make([]compatRecord, 0, len(z.Records))
	for _, r := range z.Records {
		cr := compatRecord{Zone: z.Name, Record: r.Name, Status: health(r.Healthy > 0), Backends: make([]compatBackend, 0, len(r.Backends))}
		for _, b := range r.Backends {
			cr.Backends = append(cr.Backends, compatBackend{Address: b.Address, Alive: health(b.Healthy), LastHealthcheck: b.LastCheck.UTC().Format(time.RFC3339)})
		}
		out = append(out, cr)
	}
	return out
}

// overview answers a map from zone name to its records.
func (s *Server) overview(w http.ResponseWriter, _ *http.Request) {
	out := make(map[string][]compatRecord)
	for _, z := range s.status() {
		out[z.Name] = compatRecords(z)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) overviewZone(w http.ResponseWriter, r *http.Request) {
	z, ok := findZone(s.status(), r.PathValue("zone"))
	if !ok {
		writeError(w, http.StatusNotFound, "Zone not found")
		return
	}
	writeJSON(w, http.StatusOK, compatRecords(z))
}

// compatSelector is the body of CoreDNS-GSLB's bulk actions.
type compatSelector struct {
	Location      string   `json:"location"`
	AddressPrefix string   `json:"address_prefix"`
	Tags          []string `json:"tags"`
}

// compatBackendRef names a changed backend in the answer of a bulk action.
type compatBackendRef struct {
	Record  string `json:"record"`
	Address string `json:"address"`
}

// compatAction sets the override action on the backends that the body selects, without expiry,
// and answers as CoreDNS-GSLB does, with the count under "enabled" or "disabled".
func (s *Server) compatAction(action overlay.Action) http.HandlerFunc {
	count := string(action) + "d"
	return func(w http.ResponseWriter, r *http.Request) {
		var cs compatSelector
		if err := decodeJSON(r, &cs); err != nil {
			fail(w, err)
			return
		}
		sel := Selector{Location: cs.Location, AddressPrefix: cs.AddressPrefix, Tags: cs.Tags}
		targets, err := s.apply(r.Context(), action, sel, span{}, "", false)
		if err != nil {
			fail(w, err)
			return
		}
		refs := make([]compatBackendRef, len(targets))
		for i, t := range targets {
			refs[i] = compatBackendRef{Record: t.Record, Address: t.Address}
		}
		writeJSON(w, http.StatusOK, map[string]any{"success": true, "status": "ok", count: len(refs), "backends": refs})
	}
}

// compatStatusRecord is a record in the answer of GET /api/v1/status: the overview's record,
// which CoreDNS-GSLB names by "record" in some versions and "fqdn" in others, so both are set.
type compatStatusRecord struct {
	FQDN string `json:"fqdn"`
	compatRecord
}

// compatStatus answers GET /api/v1/status: every zone with its records and their backends'
// health, in the overview's shape.
func (s *Server) compatStatus(w http.ResponseWriter, _ *http.Request) {
	out := make(map[string][]compatStatusRecord)
	for _, z := range s.status() {
		recs := []compatStatusRecord{}
		for _, r := range compatRecords(z) {
			recs = append(recs, compatStatusRecord{FQDN: r.Record, compatRecord: r})
		}
		out[z.Name] = recs
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "status": "ok", "zones": out})
}

// compatPoolBackend is one backend of the pool that PUT .../backends asks for, in the field
// names of CoreDNS-GSLB's zone files. Address identifies it, with Port when the record has
// several backends at one address. Priority and Weight, when given, must be the configured
// ones: the zone files own them.
type compatPoolBackend struct {
	Address  string `json:"address"`
	Port     *int   `json:"port,omitempty"`
	Enable   *bool  `json:"enable,omitempty"`
	Priority *int   `json:"priority,omitempty"`
	Weight   *int   `json:"weight,omitempty"`
}

// compatPoolRequest is the body of PUT /api/v1/zones/{zone}/records/{fqdn}/backends.
type compatPoolRequest struct {
	Backends []compatPoolBackend `json:"backends"`
}

// compatPoolChange names a backend of the record and whether the pool serves it.
type compatPoolChange struct {
	Record  string `json:"record"`
	Address string `json:"address"`
	Port    int    `json:"port,omitempty"`
	Enabled bool   `json:"enabled"`
}

// compatPool answers PUT /api/v1/zones/{zone}/records/{fqdn}/backends. CoreDNS-GSLB replaces
// the record's backend list; Meridian's backends come from the zone files, so the pool can
// only select among the configured backends: the listed ones are served (enable: false
// excepted), the others are disabled, all in one overlay change. A listed backend that is
// not configured refuses the whole request.
func (s *Server) compatPool(w http.ResponseWriter, r *http.Request) {
	var req compatPoolRequest
	if err := decodeJSON(r, &req); err != nil {
		fail(w, err)
		return
	}
	if req.Backends == nil {
		writeError(w, http.StatusBadRequest, "backends is required (an empty list disables every backend)")
		return
	}
	z, ok := findZone(s.status(), r.PathValue("zone"))
	if !ok {
		writeError(w, http.StatusNotFound, "Zone not found")
		return
	}
	name := config.CanonicalName(r.PathValue("fqdn"))
	i := slices.IndexFunc(z.Records, func(rec Record) bool { return config.CanonicalName(rec.Name) == name })
	if i < 0 {
		writeError(w, http.StatusNotFound, "Record not found")
		return
	}
	rec := z.Records[i]
	want, err := poolMembers(rec, req.Backends)
	if err != nil {
		fail(w, err)
		return
	}
	by := userOf(r.Context())
	changes := make([]overlay.Change, 0, len(rec.Backends))
	out := make([]compatPoolChange, 0, len(rec.Backends))
	for i, b := range rec.Backends {
		serve, listed := want[i]
		changes = append(changes, poolChange(b, serve && listed, by))
		out = append(out, compatPoolChange{Record: rec.Name, Address: b.Address, Port: b.Port, Enabled: serve && listed})
	}
	if err := s.store(r.Context(), changes, false); err != nil {
		fail(w, err)
		return
	}
	s.log.Infof("admin API: %s set the pool of %s to %d of its %d backends", cmp.Or(by, "anonymous"), rec.Name, len(want), len(rec.Backends))
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "status": "ok", "zone": z.Name, "record": rec.Name, "backends": out})
}

// poolChange is the overlay change that makes b served or not: no override when its
// configuration already says so, an enable or disable override otherwise.
func poolChange(b Backend, serve bool, by string) overlay.Change {
	c := overlay.Change{Key: b.Key, Action: overlay.Clear, By: by, Reason: "backend pool set by the API"}
	switch {
	case serve && !b.Enabled:
		c.Action = overlay.Enable
	case !serve && b.Enabled:
		c.Action = overlay.Disable
	}
	if c.Action == overlay.Clear {
		c.Reason = ""
	}
	return c
}

// poolMembers maps the pool's backends to the record's, by index: true when the pool serves
// it. Each pool backend must name exactly one configured backend, once, with its configured
// priority and weight if it gives them.
func poolMembers(rec Record, pool []compatPoolBackend) (map[int]bool, error) {
	want := make(map[int]bool, len(pool))
	for n, p := range pool {
		where := fmt.Sprintf("backends[%d]", n)
		if p.Address == "" {
			return nil, errorf(http.StatusBadRequest, "%s: address is required", where)
		}
		var found []int
		for i, b := range rec.Backends {
			if strings.EqualFold(b.Address, p.Address) && (p.Port == nil || *p.Port == b.Port) {
				found = append(found, i)
			}
		}
		switch {
		case len(found) == 0:
			return nil, errorf(http.StatusUnprocessableEntity, "%s: %s has no backend %s%s: Meridian serves the backends of the zone files, add it there", where, rec.Name, p.Address, portText(p.Port))
		case len(found) > 1:
			return nil, errorf(http.StatusUnprocessableEntity, "%s: %s has %d backends at %s: give the port", where, rec.Name, len(found), p.Address)
		}
		i := found[0]
		b := rec.Backends[i]
		if _, dup := want[i]; dup {
			return nil, errorf(http.StatusBadRequest, "%s: backend %s is listed twice", where, b.Key)
		}
		if p.Priority != nil && *p.Priority != b.Priority {
			return nil, errorf(http.StatusConflict, "%s: priority %d, but the zone file gives %s priority %d: change it there", where, *p.Priority, b.Address, b.Priority)
		}
		if p.Weight != nil && *p.Weight != b.Weight {
			return nil, errorf(http.StatusConflict, "%s: weight %d, but the zone file gives %s weight %d: change it there", where, *p.Weight, b.Address, b.Weight)
		}
		want[i] = p.Enable == nil || *p.Enable
	}
	return want, nil
}

func portText(port *int) string {
	if port == nil {
		return ""
	}
	return fmt.Sprintf(" port %d", *port)
}
