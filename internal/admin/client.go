package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/meridian-gslb/meridian/internal/canary"
	"github.com/meridian-gslb/meridian/internal/drill"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// Client calls the versioned admin API. meridian ctl is built on it.
type Client struct {
	// BaseURL is the root of the API, such as http://127.0.0.1:8080.
	BaseURL string
	// HTTP makes the requests; http.DefaultClient when nil.
	HTTP *http.Client
	// User and Password are sent as basic authentication when User is set; Token as a bearer
	// token when it is set.
	User, Password string
	Token          string
}

// StatusError is an answer of the API with an error status.
type StatusError struct {
	Code int
	// Message is the API's error message.
	Message string
	// Breaches are, in a refusal of the drain guard (409), the records the change would
	// have left below their guard.
	Breaches []Breach
	body     []byte
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

// do sends a request to path with query and, when in is not nil, in as a JSON body, and
// decodes the answer into out.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	u := strings.TrimSuffix(c.BaseURL, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return fmt.Errorf("admin API request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	} else if c.User != "" {
		req.SetBasicAuth(c.User, c.Password)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("admin API %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		e := &StatusError{Code: resp.StatusCode, body: data}
		var eb ErrorBody
		if json.Unmarshal(data, &eb) == nil && eb.Error != "" {
			e.Message, e.Breaches = eb.Error, eb.Breaches
		} else {
			e.Message = strings.TrimSpace(string(data))
		}
		return e
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("admin API %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// Zones returns every zone with its records and backends.
func (c *Client) Zones(ctx context.Context) ([]Zone, error) {
	var out []Zone
	return out, c.do(ctx, http.MethodGet, "/api/v1/zones", nil, nil, &out)
}

// Backends returns the backends that sel selects and that are in state (any when empty).
func (c *Client) Backends(ctx context.Context, sel Selector, state State) ([]BackendStatus, error) {
	q := url.Values{"key": sel.Keys, "tag": sel.Tags}
	for k, v := range map[string]string{"zone": sel.Zone, "record": sel.Record, "location": sel.Location, "address_prefix": sel.AddressPrefix, "state": string(state)} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out []BackendStatus
	return out, c.do(ctx, http.MethodGet, "/api/v1/backends", q, nil, &out)
}

// Act sets the override action (or clears it) on the backends that req selects.
func (c *Client) Act(ctx context.Context, action overlay.Action, req ActionRequest) (ActionResult, error) {
	var out ActionResult
	return out, c.do(ctx, http.MethodPost, "/api/v1/backends/"+url.PathEscape(string(action)), nil, req, &out)
}

// Explain asks how q is answered. The server fills in a type and a client left empty.
func (c *Client) Explain(ctx context.Context, q Query) (Explanation, error) {
	v := url.Values{"name": {q.Name}}
	if q.Type != "" {
		v.Set("type", q.Type)
	}
	if q.Client.IsValid() {
		v.Set("client", q.Client.String())
	}
	if q.ECS.IsValid() {
		v.Set("ecs", q.ECS.String())
	}
	v["down"], v["drained"] = q.Down, q.Drained
	var out Explanation
	return out, c.do(ctx, http.MethodGet, "/api/v1/explain", v, nil, &out)
}

// Reload reloads the configuration of every gslb block. A block that failed to reload is in
// the result, with a StatusError.
func (c *Client) Reload(ctx context.Context) (ReloadResult, error) {
	var out ReloadResult
	err := c.do(ctx, http.MethodPost, "/api/v1/reload", nil, struct{}{}, &out)
	if se, ok := errors.AsType[*StatusError](err); ok && se.Code == http.StatusUnprocessableEntity {
		if json.Unmarshal(se.body, &out) == nil {
			return out, err
		}
	}
	return out, err
}

// Drills returns every block's drills, with their next runs and last reports.
func (c *Client) Drills(ctx context.Context) ([]drill.Status, error) {
	var out []drill.Status
	return out, c.do(ctx, http.MethodGet, "/api/v1/drills", nil, nil, &out)
}

// RunDrill runs a drill by name, or a hypothesis, now, and returns its report.
func (c *Client) RunDrill(ctx context.Context, req DrillRequest) (drill.Report, error) {
	var out drill.Report
	return out, c.do(ctx, http.MethodPost, "/api/v1/drills/run", nil, req, &out)
}

// StartShift starts a staged shift.
func (c *Client) StartShift(ctx context.Context, req ShiftRequest) (ShiftStatus, error) {
	var out ShiftStatus
	return out, c.do(ctx, http.MethodPost, "/api/v1/shifts", nil, req, &out)
}

// Shifts lists the staged shifts.
func (c *Client) Shifts(ctx context.Context) ([]ShiftStatus, error) {
	var out []ShiftStatus
	return out, c.do(ctx, http.MethodGet, "/api/v1/shifts", nil, nil, &out)
}

// CancelShift ends the shift id: its record's configured weights serve again.
func (c *Client) CancelShift(ctx context.Context, id string) error {
	var out map[string]string
	return c.do(ctx, http.MethodPost, "/api/v1/shifts/"+url.PathEscape(id)+"/cancel", nil, struct{}{}, &out)
}

// Canaries returns the canaries' last round or, with now, runs one.
func (c *Client) Canaries(ctx context.Context, now bool) (canary.Report, error) {
	var out canary.Report
	if now {
		return out, c.do(ctx, http.MethodPost, "/api/v1/canaries/run", nil, struct{}{}, &out)
	}
	return out, c.do(ctx, http.MethodGet, "/api/v1/canaries", nil, nil, &out)
}
