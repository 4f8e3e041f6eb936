package admin

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/overlay"
)

// The audit log: every request that changes something (the overrides' actions, CoreDNS-GSLB's
// bulk actions and pools, reloads), whether it succeeded or was refused, is one line of JSON
// in an append-only file, rotated by size; GET /api/v1/audit returns the latest entries.

// Defaults of the audit log.
const (
	DefaultAuditMaxSize = 16 << 20
	DefaultAuditKeep    = 10
	// auditRecent is how many entries the log keeps in memory for the API and the dashboard,
	// the most GET /api/v1/audit returns.
	auditRecent = 1000
	// auditTail is how much of the end of the file the log reads when it opens, to find its
	// recent entries.
	auditTail = 1 << 20
)

// AuditEntry is one change, or attempt at one, through the API: a line of the audit log.
type AuditEntry struct {
	Time time.Time `json:"time"`
	// Who is the user or the token's name, empty without authentication; Auth how it
	// authenticated (basic, token, none) and Role its role.
	Who  string `json:"who"`
	Auth string `json:"auth"`
	Role Role   `json:"role"`
	// From is the client's address; Request the method and path.
	From    string `json:"from"`
	Request string `json:"request"`
	// Action is enable, disable, drain, force-up, clear, pool or reload.
	Action string `json:"action"`
	// Selector says which backends were asked for; Backends are the keys of those changed.
	Selector string   `json:"selector,omitempty"`
	Backends []string `json:"backends,omitempty"`
	// Reason, Starts and Expires are the override's.
	Reason  string    `json:"reason,omitempty"`
	Starts  time.Time `json:"starts,omitzero"`
	Expires time.Time `json:"expires,omitzero"`
	// Status is the HTTP status of the answer; Error its message when it failed.
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
}

// AuditLog is the audit log of a server: a file of JSON lines, appended to and synced for each
// entry, rotated when it would grow past its size (the file becomes FILE.1, FILE.1 FILE.2, and
// so on, up to the files it keeps), and its latest entries in memory.
type AuditLog struct {
	path    string // empty: in memory only
	maxSize int64
	keep    int

	mu     sync.Mutex
	f      *os.File
	size   int64
	recent []AuditEntry // oldest first, at most auditRecent
}

// OpenAuditLog opens (creating it and its directory if need be) the audit log at path, which
// rotates before it grows past maxSize bytes and keeps keep rotated files (the defaults when 0),
// and reads its latest entries. An empty path keeps the entries in memory only.
func OpenAuditLog(path string, maxSize int64, keep int) (*AuditLog, error) {
	a := &AuditLog{path: path, maxSize: cmp.Or(maxSize, DefaultAuditMaxSize), keep: cmp.Or(keep, DefaultAuditKeep)}
	if path == "" {
		return a, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	if err := a.open(); err != nil {
		return nil, err
	}
	a.recent = readTail(a.f, a.size)
	return a, nil
}

// open opens the file for appending, with a.mu held or before the log is shared.
func (a *AuditLog) open() error {
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit log: %w", err)
	}
	a.f, a.size = f, info.Size()
	return nil
}

// readTail returns the last auditRecent entries of the file, which is size bytes long,
// read from its last auditTail bytes; lines that are not entries are skipped.
func readTail(f *os.File, size int64) []AuditEntry {
	r, err := os.Open(f.Name())
	if err != nil {
		return nil
	}
	defer r.Close()
	start := max(0, size-auditTail)
	sc := bufio.NewScanner(io.NewSectionReader(r, start, size-start))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []AuditEntry
	first := start > 0
	for sc.Scan() {
		if first { // the line the window starts in the middle of
			first = false
			continue
		}
		var e AuditEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out[max(0, len(out)-auditRecent):]
}

// Write appends e to the log, rotating the file first when e would take it past its size. The
// entry is on disk (synced) when Write returns without error; it is in the recent entries
// either way.
func (a *AuditLog) Write(e AuditEntry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recent = append(a.recent, e)
	if len(a.recent) > auditRecent {
		a.recent = slices.Delete(a.recent, 0, len(a.recent)-auditRecent)
	}
	if a.path == "" {
		return nil
	}
	if a.f == nil {
		return errors.New("audit log: closed")
	}
	if a.size > 0 && a.size+int64(len(line)) > a.maxSize {
		if err := a.rotate(); err != nil {
			return err
		}
	}
	n, err := a.f.Write(line)
	a.size += int64(n)
	if err == nil {
		err = a.f.Sync()
	}
	if err != nil {
		return fmt.Errorf("audit log %s: %w", a.path, err)
	}
	return nil
}

// rotate renames the file to FILE.1, after moving the older ones up (FILE.1 to FILE.2, ...,
// dropping FILE.keep), and opens a new one; with a.mu held.
func (a *AuditLog) rotate() error {
	if err := a.f.Close(); err != nil {
		return fmt.Errorf("audit log %s: %w", a.path, err)
	}
	a.f = nil
	for i := a.keep - 1; i >= 1; i-- {
		if err := os.Rename(a.rotated(i), a.rotated(i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("audit log: rotate: %w", err)
		}
	}
	if err := os.Rename(a.path, a.rotated(1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("audit log: rotate: %w", err)
	}
	return a.open()
}

// rotated is the name of the i-th rotated file.
func (a *AuditLog) rotated(i int) string { return a.path + "." + strconv.Itoa(i) }

// Recent returns up to limit of the latest entries, newest first.
func (a *AuditLog) Recent(limit int) []AuditEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := min(limit, len(a.recent))
	out := make([]AuditEntry, 0, n)
	for i := len(a.recent) - 1; i >= len(a.recent)-n; i-- {
		out = append(out, a.recent[i])
	}
	return out
}

// Path returns the file of the log, empty for one in memory.
func (a *AuditLog) Path() string { return a.path }

// Close closes the file; later writes fail.
func (a *AuditLog) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}

type auditKey struct{}

// auditOf returns the entry the request's change is recorded in, nil for a request that
// changes nothing.
func auditOf(ctx context.Context) *AuditEntry {
	e, _ := ctx.Value(auditKey{}).(*AuditEntry)
	return e
}

// noteChanges records in the request's entry what changes make: the backends, the reason and
// the times of the first (they are the same for every change of a request).
func noteChanges(ctx context.Context, changes []overlay.Change) {
	e := auditOf(ctx)
	if e == nil || len(changes) == 0 {
		return
	}
	e.Backends = make([]string, len(changes))
	for i, c := range changes {
		e.Backends[i] = c.Key
	}
	e.Reason, e.Starts, e.Expires = changes[0].Reason, changes[0].Starts, changes[0].Expires
}

// noteSelector records which backends the request asked for.
func noteSelector(ctx context.Context, sel string) {
	if e := auditOf(ctx); e != nil {
		e.Selector = sel
	}
}

// audited records every request to next in the audit log, as action (or, when action is
// empty, the request's {action}), with its outcome.
func (s *Server) audited(action string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := identityOf(r.Context())
		from := r.RemoteAddr
		if host, _, err := net.SplitHostPort(from); err == nil {
			from = host
		}
		e := &AuditEntry{
			Time: time.Now().UTC(), Who: id.Name, Auth: id.Auth, Role: id.Role, From: from,
			Request: r.Method + " " + r.URL.Path, Action: cmp.Or(action, r.PathValue("action")),
		}
		rec := &statusRecorder{ResponseWriter: w}
		next(rec, r.WithContext(context.WithValue(r.Context(), auditKey{}, e)))
		e.Status = rec.code
		if rec.code >= 400 {
			var body ErrorBody
			if json.Unmarshal(rec.body.Bytes(), &body) == nil {
				e.Error = body.Error
			}
		}
		s.writeAudit(*e)
	}
}

// writeAudit writes e to the server's audit log; a failure is logged and counted, and does
// not undo the change.
func (s *Server) writeAudit(e AuditEntry) {
	s.mu.Lock()
	log := s.audit
	s.mu.Unlock()
	if err := log.Write(e); err != nil {
		auditWrites.WithLabelValues("failed").Inc()
		s.log.Errorf("admin API: %v: %s %s by %s from %s not recorded", err, e.Action, e.Request, cmp.Or(e.Who, "anonymous"), e.From)
		return
	}
	auditWrites.WithLabelValues("written").Inc()
}

// statusRecorder remembers the status a handler answered with and, for an error, the body.
type statusRecorder struct {
	http.ResponseWriter
	code int
	body bytes.Buffer
}

// WriteHeader implements http.ResponseWriter.
func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	if r.code >= 400 && r.body.Len() < 4096 {
		r.body.Write(b[:min(len(b), 4096-r.body.Len())])
	}
	return r.ResponseWriter.Write(b)
}

// AuditAnswer is the answer to GET /api/v1/audit.
type AuditAnswer struct {
	// File is where the log is kept; empty when it is kept in memory only.
	File    string       `json:"file,omitempty"`
	Entries []AuditEntry `json:"entries"`
}

// auditList answers GET /api/v1/audit?limit=N: the latest entries, newest first.
func (s *Server) auditList(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r, defaultTransitions, auditRecent)
	if err != nil {
		fail(w, err)
		return
	}
	s.mu.Lock()
	log := s.audit
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, AuditAnswer{File: log.Path(), Entries: log.Recent(limit)})
}

// limitParam reads the query parameter limit, from 1 to most; def when absent.
func limitParam(r *http.Request, def, most int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, errorf(http.StatusBadRequest, "limit %q is not a number from 1 to %d", v, most)
	}
	return n, nil
}
