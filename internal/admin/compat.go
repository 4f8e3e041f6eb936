package admin

import (
	"net/http"
	"time"

	"github.com/meridian-gslb/meridian/internal/overlay"
)

// The endpoints of CoreDNS-GSLB's API, for the scripts written against it: GET /api/overview,
// GET /api/overview/{zone}, and POST /api/backends/enable and /disable. Their shapes are
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
		targets, err := s.apply(r.Context(), action, sel, time.Time{}, "")
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
