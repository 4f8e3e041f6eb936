package admin

import (
	"cmp"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SharesProvider is a Provider that measures where its traffic goes (traffic_shares), for GET
// /api/v1/shares and the dashboard.
type SharesProvider interface {
	// Shares returns where the traffic of each record with some went over the hour that ends
	// at now.
	Shares(now time.Time) []RecordShares
}

// RecordShares is where one record's traffic went (docs/api.md, "Traffic shares").
type RecordShares struct {
	Record string `json:"record"`
	Mode   string `json:"mode"`
	// Start is the start of the first bucket of each backend's series, BucketSeconds long.
	Start         time.Time      `json:"start"`
	BucketSeconds int            `json:"bucket_seconds"`
	Backends      []BackendShare `json:"backends"`
	// Countries is the traffic by client country of a geo record since the start, the
	// largest first; absent for the others.
	Countries []CountryShares `json:"countries,omitempty"`
}

// BackendShare is one backend's share of its record's traffic of its address family.
type BackendShare struct {
	Key     string `json:"key"`
	Backend string `json:"backend"`
	Family  string `json:"family"`
	// Configured is the share its weight gives it; Actual what it got over the last five
	// minutes (null without traffic); Series what it got in each bucket, oldest first.
	Configured float64  `json:"configured"`
	Actual     *float64 `json:"actual"`
	Series     Shares   `json:"series"`
	// TTLSeconds is its traffic since the start: the TTLs of the answers that carried it.
	TTLSeconds uint64 `json:"ttl_seconds"`
}

// CountryShares is the traffic of a geo record's clients of one country: its part, and each
// backend's share of it by key.
type CountryShares struct {
	Country    string             `json:"country"`
	TTLSeconds uint64             `json:"ttl_seconds"`
	Shares     map[string]float64 `json:"shares"`
}

// Shares is a series of shares, with -1 for a bucket without traffic: JSON carries it as an
// array of numbers and nulls.
type Shares []float64

// MarshalJSON writes the series, with null for negative values and three decimals.
func (s Shares) MarshalJSON() ([]byte, error) {
	return appendSeries(s, func(b []byte, v float64) []byte {
		return strconv.AppendFloat(b, math.Round(v*1000)/1000, 'f', -1, 64)
	}), nil
}

// shares answers GET /api/v1/shares[?record=NAME]: where the traffic of each record went, by
// record.
func (s *Server) shares(w http.ResponseWriter, r *http.Request) {
	record := strings.TrimSpace(r.URL.Query().Get("record"))
	if record != "" && !strings.HasSuffix(record, ".") {
		record += "."
	}
	out := []RecordShares{}
	for _, reg := range s.active() {
		if sp, ok := reg.p.(SharesProvider); ok {
			for _, rs := range sp.Shares(time.Now()) {
				if record == "" || strings.EqualFold(rs.Record, record) {
					out = append(out, rs)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b RecordShares) int { return cmp.Compare(a.Record, b.Record) })
	writeJSON(w, http.StatusOK, out)
}
