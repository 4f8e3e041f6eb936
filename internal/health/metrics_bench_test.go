package health

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// BenchmarkScrapeBackendHealthy serves a /metrics scrape of bench/health.sh's 30,000
// backend_healthy series (10,000 records of three backends, all up) through client_golang's
// handler, as CoreDNS's prometheus plugin does, and reports what one scrape allocates:
//
//	go test -run XXX -bench ScrapeBackendHealthy -benchmem ./internal/health
func BenchmarkScrapeBackendHealthy(b *testing.B) {
	const records, per = 10000, 3
	specs := make([]Spec, 0, records*per)
	for r := range records {
		for i := range per {
			key := fmt.Sprintf("r%d.bench.test.|127.0.0.1|%d", r, 10000+r*per+i)
			s := spec(key, &scriptedProber{}, key, time.Hour)
			s.Record, s.Backend = fmt.Sprintf("r%d.bench.test.", r), fmt.Sprintf("127.0.0.1:%d", 10000+r*per+i)
			specs = append(specs, s)
		}
	}
	m := NewManager(Options{Log: testLog{}})
	m.Sync(specs, keys(specs...))
	m.mu.Lock()
	for _, be := range m.backends {
		be.status = Up
	}
	m.mu.Unlock()
	backendHealthy.add(m)
	defer backendHealthy.remove(m)
	reg := prometheus.NewRegistry()
	reg.MustRegister(backendHealthy)
	handler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		w.Body = nil // the body is not kept: a server writes it out
		handler.ServeHTTP(discardRecorder{w}, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// discardRecorder is a ResponseRecorder that throws the body away.
type discardRecorder struct{ *httptest.ResponseRecorder }

func (d discardRecorder) Write(p []byte) (int, error) { return io.Discard.Write(p) }
