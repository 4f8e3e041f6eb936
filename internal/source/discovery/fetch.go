package discovery

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/meridian-gslb/meridian/internal/config"
)

// Endpoint is one backend a source returned: an IP address and a port (0 when it gives none).
type Endpoint struct {
	IP   netip.Addr
	Port uint16
}

// String formats e as ADDRESS:PORT.
func (e Endpoint) String() string { return netip.AddrPortFrom(e.IP, e.Port).String() }

// maxBody bounds what an HTTP or Consul source may return.
const maxBody = 4 << 20

// fetcher reads the endpoints of one discovery block.
type fetcher func(ctx context.Context, d *config.Discovery) ([]Endpoint, error)

// fetch reads the endpoints of d, deduplicated and sorted, within d's timeout.
func (s *Source) fetch(ctx context.Context, d *config.Discovery) ([]Endpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, d.Timeout())
	defer cancel()
	var f fetcher
	switch d.Type {
	case config.DiscoveryHTTP:
		f = s.fetchHTTP
	case config.DiscoveryConsul:
		f = s.fetchConsul
	default:
		f = fetchDNS
	}
	eps, err := f(ctx, d)
	if err != nil {
		return nil, err
	}
	if typ := d.PortCheck(); typ != "" {
		for _, ep := range eps {
			if ep.Port == 0 {
				return nil, fmt.Errorf("%s has no port, which the block's %s check needs (or give the check a port parameter)", ep.IP, typ)
			}
		}
	}
	slices.SortFunc(eps, func(a, b Endpoint) int {
		return cmp.Or(a.IP.Compare(b.IP), cmp.Compare(a.Port, b.Port))
	})
	return slices.Compact(eps), nil
}

// getJSON GETs url and decodes its JSON body into v; any status but 200 is an error.
func (s *Source) getJSON(ctx context.Context, rawURL string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	where := req.URL.Redacted() // errors and logs never show a password of the URL
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return fmt.Errorf("GET %s: %w", where, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %s", where, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", where, err)
	}
	if len(body) > maxBody {
		return fmt.Errorf("GET %s: the body is larger than %d bytes", where, maxBody)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", where, err)
	}
	return nil
}

// fetchHTTP reads a JSON list whose items are addresses ("10.0.0.1") or objects with an
// address and a port ({"address": "10.0.0.1", "port": 8080}).
func (s *Source) fetchHTTP(ctx context.Context, d *config.Discovery) ([]Endpoint, error) {
	var items []json.RawMessage
	if err := s.getJSON(ctx, d.Endpoint, &items); err != nil {
		return nil, err
	}
	return httpEndpoints(items)
}

// httpEndpoints checks the items of an http source's list: each an address, or an object with
// an address and a port.
func httpEndpoints(items []json.RawMessage) ([]Endpoint, error) {
	eps := make([]Endpoint, 0, len(items))
	for i, raw := range items {
		var item struct {
			Address string `json:"address"`
			Port    int    `json:"port"`
		}
		if err := json.Unmarshal(raw, &item.Address); err != nil {
			if err := json.Unmarshal(raw, &item); err != nil {
				return nil, fmt.Errorf("item %d: not an address nor an object with an address and a port: %s", i, raw)
			}
		}
		ep, err := endpoint(item.Address, item.Port)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		eps = append(eps, ep)
	}
	return eps, nil
}

// fetchConsul reads the instances of a service of the Consul catalog
// (GET /v1/catalog/service/<service>, filtered by tag when the block sets one): each
// instance's service address, or its node's address when the service has none, and its port.
func (s *Source) fetchConsul(ctx context.Context, d *config.Discovery) ([]Endpoint, error) {
	u := consulURL(d)
	var instances []struct {
		Address        string
		ServiceAddress string
		ServicePort    int
	}
	if err := s.getJSON(ctx, u, &instances); err != nil {
		return nil, err
	}
	eps := make([]Endpoint, 0, len(instances))
	for _, in := range instances {
		addr := cmp.Or(in.ServiceAddress, in.Address)
		ep, err := endpoint(addr, in.ServicePort)
		if err != nil {
			return nil, fmt.Errorf("consul service %s: %w", d.Service, err)
		}
		eps = append(eps, ep)
	}
	return eps, nil
}

// endpoint checks a discovered address and port.
func endpoint(addr string, port int) (Endpoint, error) {
	ip, err := netip.ParseAddr(addr)
	if err != nil || ip.Zone() != "" {
		return Endpoint{}, fmt.Errorf("%q is not an IP address", addr)
	}
	if port < 0 || port > 65535 {
		return Endpoint{}, fmt.Errorf("port %d of %s is out of range", port, addr)
	}
	return Endpoint{IP: ip.Unmap(), Port: uint16(port)}, nil
}

// shown is d's endpoint as logs and the admin API show it: without the password of a URL.
func shown(d *config.Discovery) string {
	if u, err := url.Parse(d.Endpoint); err == nil && u.User != nil {
		return u.Redacted()
	}
	return d.Endpoint
}

// consulURL is the catalog endpoint of d's service.
func consulURL(d *config.Discovery) string {
	u := strings.TrimSuffix(d.Endpoint, "/") + "/v1/catalog/service/" + url.PathEscape(d.Service)
	if d.Tag != "" {
		u += "?tag=" + url.QueryEscape(d.Tag)
	}
	return u
}
