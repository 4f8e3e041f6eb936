package shift

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/catalog"
)

// Results counts the health-check results of the backends keys names since a time, and how
// many failed: what the failure_rate signal reads (the engine's health history).
type Results func(keys []string, since time.Time) (results, failures int)

// errNoData is a signal that has nothing to say yet: the shift waits, neither moving on nor
// rolling back.
var errNoData = errors.New("no data yet")

// prometheusTimeout bounds a query of the Prometheus server.
const prometheusTimeout = 5 * time.Second

// reader reads the value of a shift's signal.
type reader struct {
	results    Results
	prometheus string // the server's base URL; empty: none
	client     *http.Client
}

// read returns the value of s's signal on r, the record of the snapshot served: an error
// (errNoData among them) means it could not be read, and the shift waits.
func (rd reader) read(ctx context.Context, s *Shift, r *catalog.Record) (float64, error) {
	switch s.Signal.Kind {
	case SignalFailureRate:
		var keys []string
		for b := range match(r, s.To) {
			keys = append(keys, b.Key())
		}
		if rd.results == nil {
			return 0, errors.New("the block keeps no health history")
		}
		n, failed := rd.results(keys, s.StepStarted)
		if n == 0 {
			return 0, errNoData
		}
		return float64(failed) / float64(n), nil
	case SignalMetric:
		load := -1.0
		for b := range match(r, s.To) {
			load = max(load, b.RelativeLoad())
		}
		if load < 0 {
			return 0, fmt.Errorf("no load scraped from the to backends: %w", errNoData)
		}
		return load, nil
	case SignalPrometheus:
		return rd.query(ctx, s.Signal.Query)
	}
	return 0, fmt.Errorf("unknown signal %q", s.Signal.Kind)
}

// promResponse is the answer of Prometheus's /api/v1/query.
type promResponse struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// query runs an instant PromQL query and returns the highest value of its result: a scalar's,
// or the highest sample of a vector (errNoData when it is empty).
func (rd reader) query(ctx context.Context, q string) (float64, error) {
	if rd.prometheus == "" {
		return 0, errors.New("no prometheus server is configured")
	}
	ctx, cancel := context.WithTimeout(ctx, prometheusTimeout)
	defer cancel()
	u := strings.TrimSuffix(rd.prometheus, "/") + "/api/v1/query?" + url.Values{"query": {q}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("prometheus query: %w", err)
	}
	resp, err := rd.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("prometheus query: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return 0, fmt.Errorf("prometheus query: %w", err)
	}
	var pr promResponse
	if err := json.Unmarshal(body, &pr); err != nil {
		return 0, fmt.Errorf("prometheus query: status %d: %w", resp.StatusCode, err)
	}
	if pr.Status != "success" {
		return 0, fmt.Errorf("prometheus query %q: %s", q, pr.Error)
	}
	var samples [][2]any // [time, "value"]
	switch pr.Data.ResultType {
	case "scalar":
		var v [2]any
		err = json.Unmarshal(pr.Data.Result, &v)
		samples = append(samples, v)
	case "vector":
		var vec []struct {
			Value [2]any `json:"value"`
		}
		err = json.Unmarshal(pr.Data.Result, &vec)
		for _, s := range vec {
			samples = append(samples, s.Value)
		}
	default:
		return 0, fmt.Errorf("prometheus query %q gives a %s: want a scalar or an instant vector", q, pr.Data.ResultType)
	}
	if err != nil {
		return 0, fmt.Errorf("prometheus query %q: %w", q, err)
	}
	if len(samples) == 0 {
		return 0, fmt.Errorf("prometheus query %q: empty result: %w", q, errNoData)
	}
	best := math.Inf(-1)
	for _, s := range samples {
		text, _ := s[1].(string)
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return 0, fmt.Errorf("prometheus query %q: value %v: %w", q, s[1], err)
		}
		if !math.IsNaN(v) {
			best = max(best, v)
		}
	}
	if math.IsInf(best, -1) {
		return 0, fmt.Errorf("prometheus query %q: NaN: %w", q, errNoData)
	}
	return best, nil
}
