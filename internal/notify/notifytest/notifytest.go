// Package notifytest is a webhook receiver for tests: an HTTP server on loopback that records
// every delivery it gets, answers the statuses a test scripts, and can hold its answers back.
package notifytest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/meridian-gslb/meridian/internal/notify"
)

// Request is one delivery the receiver got.
type Request struct {
	Header http.Header
	Body   []byte
	// Event is the body decoded (the zero Event when it is not one).
	Event notify.Event
}

// Receiver is a loopback webhook receiver.
type Receiver struct {
	// URL is where it listens.
	URL string

	mu       sync.Mutex
	statuses []int // the answers to the first requests, in order; 200 after them
	requests []Request
	gate     chan struct{} // nil, or closed by Release: requests wait for it
}

// NewReceiver starts a receiver that answers statuses to its first requests, in order, and
// 200 to the others. It stops when the test ends.
func NewReceiver(t testing.TB, statuses ...int) *Receiver {
	t.Helper()
	r := &Receiver{statuses: statuses}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = srv.URL
	t.Cleanup(func() {
		r.Release()
		srv.Close()
	})
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	rec := Request{Header: req.Header.Clone(), Body: body}
	_ = json.Unmarshal(body, &rec.Event)
	r.mu.Lock()
	r.requests = append(r.requests, rec)
	status := http.StatusOK
	if n := len(r.requests); n <= len(r.statuses) {
		status = r.statuses[n-1]
	}
	gate := r.gate
	r.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-req.Context().Done():
			return
		}
	}
	w.WriteHeader(status)
}

// Hold makes the requests from now on wait, their delivery received but not answered, until
// Release.
func (r *Receiver) Hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gate = make(chan struct{})
}

// Release answers the requests that Hold made wait, and those that come after at once.
func (r *Receiver) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gate != nil {
		close(r.gate)
		r.gate = nil
	}
}

// Requests returns the requests received so far (each attempt of a delivery is one), in order.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// Events returns the events of type typ received so far, in order, and with their requests.
func (r *Receiver) Events(typ string) []Request {
	var out []Request
	for _, req := range r.Requests() {
		if req.Event.Type == typ {
			out = append(out, req)
		}
	}
	return out
}
