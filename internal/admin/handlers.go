package admin

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// maxBody bounds the size of a request body.
const maxBody = 1 << 20

// Transitions returned when the request does not say, and at most.
const (
	defaultTransitions = 100
	maxTransitions     = 1000
)

// route is one endpoint of the API: a ServeMux pattern, the role it needs, and its handler.
// A route that changes something has an audit action (empty: the request's {action}) and
// changes set: each request to it is recorded in the audit log.
type route struct {
	pattern string
	role    Role
	handler http.HandlerFunc
	changes bool
	action  string
}

// apiRoutes lists the endpoints that require authentication when the server has credentials.
func (s *Server) apiRoutes() []route {
	read := func(pattern string, h http.HandlerFunc) route {
		return route{pattern: pattern, role: RoleRead, handler: h}
	}
	change := func(pattern string, role Role, action string, h http.HandlerFunc) route {
		return route{pattern: pattern, role: role, handler: h, changes: true, action: action}
	}
	return []route{
		// The endpoints of CoreDNS-GSLB, with its request and response shapes.
		read("GET /api/overview", s.overview),
		read("GET /api/overview/{zone}", s.overviewZone),
		change("POST /api/backends/enable", RoleOperate, string(overlay.Enable), s.compatAction(overlay.Enable)),
		change("POST /api/backends/disable", RoleOperate, string(overlay.Disable), s.compatAction(overlay.Disable)),
		read("GET /api/v1/status", s.compatStatus),
		change("PUT /api/v1/zones/{zone}/records/{fqdn}/backends", RoleOperate, "pool", s.compatPool),
		// Version 1.
		read("GET /api/v1/zones", s.zones),
		read("GET /api/v1/zones/{zone}", s.zone),
		read("GET /api/v1/backends", s.backends),
		read("GET /api/v1/backends/history", s.history),
		change("POST /api/v1/backends/{action}", RoleOperate, "", s.act),
		read("GET /api/v1/overrides", s.overrides),
		read("GET /api/v1/transitions", s.transitions),
		read("GET /api/v1/timelines", s.timelines),
		read("GET /api/v1/shares", s.shares),
		read("GET /api/v1/explain", s.explain),
		read("GET /api/v1/sites", s.sites),
		read("GET /api/v1/drills", s.drills),
		change("POST /api/v1/drills/run", RoleOperate, "drill", s.runDrill),
		read("GET /api/v1/shifts", s.shifts),
		change("POST /api/v1/shifts", RoleOperate, "shift", s.startShift),
		change("POST /api/v1/shifts/{id}/cancel", RoleOperate, "shift-cancel", s.cancelShift),
		read("GET /api/v1/canaries", s.canaries),
		{pattern: "POST /api/v1/canaries/run", role: RoleOperate, handler: s.runCanaries},
		read("GET /api/v1/whoami", s.whoami),
		{pattern: "GET /api/v1/audit", role: RoleOperate, handler: s.auditList},
		change("POST /api/v1/reload", RoleAdmin, "reload", s.reload),
	}
}

func (s *Server) routes() http.Handler {
	api := http.NewServeMux()
	for _, rt := range s.apiRoutes() {
		h := authorize(rt.role, rt.handler)
		if rt.changes {
			h = s.audited(rt.action, h)
		}
		api.HandleFunc(rt.pattern, h)
	}

	mux := http.NewServeMux()
	mux.Handle("/api/", s.authenticate(requireJSON(api)))
	// Public: they disclose nothing about the zones.
	mux.HandleFunc("GET /api/v1/openapi.yaml", serveOpenAPI)
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /ui/", uiHandler())
	mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusFound))
	return mux
}

// whoami answers GET /api/v1/whoami: who the request authenticated as, and its role.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, identityOf(r.Context()))
}

// requireJSON refuses a POST or PUT whose body is not declared as JSON: a web page of another origin
// cannot send such a request without the browser asking the API first (CORS), which it
// refuses.
func requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost || r.Method == http.MethodPut {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				writeError(w, http.StatusUnsupportedMediaType, "send the request with Content-Type: application/json")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// apiError is an error with the HTTP status it is answered with.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) *apiError {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error string `json:"error"`
	// Breaches are, in a refusal of the drain guard (409), the records the change would have
	// left below their guard.
	Breaches []Breach `json:"breaches,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	writeJSONIndent(w, code, v, "  ")
}

// writeJSONIndent writes v indented by indent, or compact when it is empty.
func writeJSONIndent(w http.ResponseWriter, code int, v any, indent string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", indent)
	_ = enc.Encode(v) // the client went away
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, ErrorBody{Error: msg})
}

// fail answers err: its own status for an apiError, 409 with the breaches for a refusal of
// the drain guard, 500 otherwise.
func fail(w http.ResponseWriter, err error) {
	if g, ok := errors.AsType[*GuardError](err); ok {
		writeJSON(w, http.StatusConflict, ErrorBody{Error: g.Error(), Breaches: g.Breaches})
		return
	}
	if e, ok := errors.AsType[*apiError](err); ok {
		writeError(w, e.code, e.msg)
		return
	}
	writeError(w, http.StatusInternalServerError, err.Error())
}

// decodeJSON reads the body of r into v: one JSON object, with no field v does not have. A body
// longer than maxBody is refused whole (413), whatever its start holds.
func decodeJSON(r *http.Request, v any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return errorf(http.StatusBadRequest, "reading the body: %v", err)
	}
	if len(body) > maxBody {
		return errorf(http.StatusRequestEntityTooLarge, "the body is longer than %d bytes", maxBody)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errorf(http.StatusBadRequest, "invalid JSON: %v", err)
	}
	if dec.More() {
		return errorf(http.StatusBadRequest, "invalid JSON: more than one value")
	}
	return nil
}

// status returns the zones of every registration that answers for them, sorted by name,
// with the overrides of the store filled in.
func (s *Server) status() []Zone {
	zones := []Zone{}
	for _, r := range s.active() {
		for _, z := range r.p.Status() {
			if slices.Contains(r.zones, config.CanonicalName(z.Name)) {
				zones = append(zones, z)
			}
		}
	}
	slices.SortFunc(zones, func(a, b Zone) int { return cmp.Compare(a.Name, b.Name) })
	overrides := make(map[string]overlay.Override)
	for _, o := range s.settings.Load().store.List() {
		overrides[o.Key] = o
	}
	for _, z := range zones {
		for _, r := range z.Records {
			for i := range r.Backends {
				if o, ok := overrides[r.Backends[i].Key]; ok {
					r.Backends[i].Override = &o
				}
			}
		}
	}
	return zones
}

// findZone returns the zone named name (in any case, with or without the trailing dot).
func findZone(zones []Zone, name string) (Zone, bool) {
	name = config.CanonicalName(name)
	i := slices.IndexFunc(zones, func(z Zone) bool { return config.CanonicalName(z.Name) == name })
	if i < 0 {
		return Zone{}, false
	}
	return zones[i], true
}

func (s *Server) zones(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.status())
}

func (s *Server) zone(w http.ResponseWriter, r *http.Request) {
	z, ok := findZone(s.status(), r.PathValue("zone"))
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("zone %s not found", r.PathValue("zone")))
		return
	}
	writeJSON(w, http.StatusOK, z)
}

// backends lists the backends that the query's selector and state match.
func (s *Server) backends(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	sel := Selector{
		Keys: q["key"], Zone: q.Get("zone"), Record: q.Get("record"), Location: q.Get("location"),
		AddressPrefix: q.Get("address_prefix"), Tags: q["tag"],
	}
	state := State(q.Get("state"))
	if state != "" && state != StateUp && state != StateDown && state != StateUnknown {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("state %q is not up, down or unknown", state))
		return
	}
	m, err := sel.compile()
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	out := []BackendStatus{}
	for _, b := range flatten(s.status()) {
		if m.match(b) && (state == "" || b.State == state) {
			out = append(out, b)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) transitions(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r, defaultTransitions, maxTransitions)
	if err != nil {
		fail(w, err)
		return
	}
	out := []Transition{}
	for _, reg := range s.active() {
		out = append(out, reg.p.Transitions(limit)...)
	}
	slices.SortStableFunc(out, func(a, b Transition) int { return b.Time.Compare(a.Time) })
	writeJSON(w, http.StatusOK, out[:min(limit, len(out))])
}

// history answers GET /api/v1/backends/history: the last hour of the probed backends of every
// block that keeps one, compact (it is mostly arrays of numbers, which indenting would put one
// per line).
func (s *Server) history(w http.ResponseWriter, _ *http.Request) {
	now := time.Now()
	out := History{Now: now, Backends: []BackendHistory{}}
	for _, reg := range s.active() {
		hp, ok := reg.p.(HistoryProvider)
		if !ok {
			continue
		}
		h := hp.History(now)
		out.BucketSeconds, out.Start = h.BucketSeconds, h.Start // the same for every block: now is
		out.Backends = append(out.Backends, h.Backends...)
	}
	slices.SortFunc(out.Backends, func(a, b BackendHistory) int {
		return cmp.Or(cmp.Compare(a.Record, b.Record), cmp.Compare(a.Key, b.Key))
	})
	writeJSONIndent(w, http.StatusOK, out, "")
}

// sites answers GET /api/v1/sites: each block that names its site, with its peers, the other
// sites' freshness and what was learned from each. A block that names no site is left out (its
// provider's view is the zero one), so that the list is empty without sites.
func (s *Server) sites(w http.ResponseWriter, _ *http.Request) {
	out := []SiteBlock{}
	for _, reg := range s.active() {
		if sp, ok := reg.p.(SitesProvider); ok {
			if v := sp.Sites(); v.Site != "" {
				out = append(out, SiteBlock{Zones: reg.zones, View: v})
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// explain answers GET /api/v1/explain?name=&type=&client=&ecs=&down=&drained=. The type
// defaults to A and the client to the address the request came from; down and drained (each
// repeatable, or comma-separated) make it a what-if.
func (s *Server) explain(w http.ResponseWriter, r *http.Request) {
	q, err := explainQuery(r)
	if err != nil {
		fail(w, err)
		return
	}
	reg, ok := s.serving(q.Name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%s is in no zone served here", q.Name))
		return
	}
	exp, err := reg.p.Explain(r.Context(), q)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("explain %s %s: %v", q.Name, q.Type, err))
		return
	}
	exp.Query = q
	writeJSON(w, http.StatusOK, exp)
}

func explainQuery(r *http.Request) (Query, error) {
	v := r.URL.Query()
	name := v.Get("name")
	if _, ok := dns.IsDomainName(name); name == "" || !ok {
		return Query{}, errorf(http.StatusBadRequest, "name %q is not a domain name", name)
	}
	q := Query{Name: config.CanonicalName(name), Type: strings.ToUpper(cmp.Or(v.Get("type"), "A"))}
	if _, ok := dns.StringToType[q.Type]; !ok {
		return Query{}, errorf(http.StatusBadRequest, "type %q is not a DNS type", v.Get("type"))
	}
	client := v.Get("client")
	if client == "" {
		client, _, _ = net.SplitHostPort(r.RemoteAddr)
	}
	ip, err := netip.ParseAddr(client)
	if err != nil {
		return Query{}, errorf(http.StatusBadRequest, "client %q is not an IP address", client)
	}
	q.Client = ip.Unmap()
	if e := v.Get("ecs"); e != "" {
		if q.ECS, err = parsePrefixOrAddr(e); err != nil {
			return Query{}, errorf(http.StatusBadRequest, "ecs %q is not an address or a prefix", e)
		}
	}
	q.Down, q.Drained = selectors(v["down"]), selectors(v["drained"])
	return q, nil
}

// selectors returns the what-if selectors of a query parameter given as a list, or
// comma-separated, or both.
func selectors(values []string) []string {
	var out []string
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// parsePrefixOrAddr parses a CIDR prefix, or an address as a prefix of its full length.
func parsePrefixOrAddr(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	ip = ip.Unmap()
	return netip.PrefixFrom(ip, ip.BitLen()), nil
}

// serving returns the registration whose zone is the closest enclosing zone of name.
func (s *Server) serving(name string) (registration, bool) {
	var best registration
	bestLen := -1
	for _, reg := range s.active() {
		for _, z := range reg.zones {
			if dns.IsSubDomain(z, name) && len(z) > bestLen {
				best, bestLen = reg, len(z)
			}
		}
	}
	return best, bestLen >= 0
}

// ReloadResult is the answer to POST /api/v1/reload: one result per gslb block.
type ReloadResult struct {
	OK bool `json:"ok"`
	// Error says what failed when OK is false.
	Error  string        `json:"error,omitempty"`
	Blocks []BlockReload `json:"blocks"`
}

// BlockReload is the result of reloading one gslb block.
type BlockReload struct {
	Zones []string `json:"zones"`
	Error string   `json:"error,omitempty"`
}

// reload reloads every block. When one fails, it keeps serving its previous configuration and
// the answer is 422 with its error.
func (s *Server) reload(w http.ResponseWriter, r *http.Request) {
	res := ReloadResult{Blocks: []BlockReload{}}
	failed := 0
	for _, reg := range s.active() {
		br := BlockReload{Zones: reg.zones}
		if err := reg.p.Reload(); err != nil {
			br.Error = err.Error()
			failed++
		}
		res.Blocks = append(res.Blocks, br)
	}
	res.OK = failed == 0
	code := http.StatusOK
	if !res.OK {
		code = http.StatusUnprocessableEntity
		res.Error = fmt.Sprintf("%d of %d gslb blocks did not reload, and serve their previous configuration", failed, len(res.Blocks))
	}
	s.log.Infof("admin API: %s reloaded the configuration (ok: %t)", cmp.Or(userOf(r.Context()), "anonymous"), res.OK)
	writeJSON(w, code, res)
}

// readyz answers 200 when every registered block serves its zones, 503 otherwise.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	regs := s.active()
	ready := len(regs) > 0
	for _, reg := range regs {
		ready = ready && reg.p.Ready()
	}
	code := http.StatusOK
	if !ready {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, map[string]bool{"ready": ready})
}
