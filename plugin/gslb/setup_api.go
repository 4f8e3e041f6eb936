package gslb

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/coredns/caddy"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/cluster"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// parseAPIOption parses the api_* option at c into o. It reports false for an option that is
// not one of them. Relative files are resolved against root.
func parseAPIOption(c *caddy.Controller, root string, o *config.APIOptions) (bool, error) {
	var err error
	switch c.Val() {
	case "api_enable":
		err = flag(c, &o.Enable, true)
	case "api_allow_unauthenticated":
		err = flag(c, &o.AllowUnauthenticated, true)
	case "api_listen_addr":
		err = listenAddr(c, &o.ListenAddr)
	case "api_listen_port":
		err = tcpPort(c, &o.ListenPort)
	case "api_tls_cert":
		err = filePath(c, root, &o.TLSCert)
	case "api_tls_key":
		err = filePath(c, root, &o.TLSKey)
	case "api_overrides_file":
		err = filePath(c, root, &o.OverridesFile)
	case "api_basic_user":
		o.BasicUser, err = single(c)
	case "api_basic_pass":
		o.BasicPass, err = single(c)
	case "api_token":
		o.Token, err = single(c)
	default:
		return false, nil
	}
	return true, err
}

// filePath parses a file name, resolved against root when it is relative.
func filePath(c *caddy.Controller, root string, dst *string) error {
	v, err := single(c)
	if err != nil {
		return err
	}
	*dst = resolve(root, v)
	return nil
}

// listenAddr parses an address to listen on, without port: an IP address or a host name.
func listenAddr(c *caddy.Controller, dst *string) error {
	v, err := single(c)
	if err != nil {
		return err
	}
	host := strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	if _, err := netip.ParseAddr(host); err != nil && (host == "" || strings.ContainsAny(host, ":/[]")) {
		return c.Errf("api_listen_addr: %q is not an address or a host name (the port is api_listen_port)", v)
	}
	*dst = host
	return nil
}

// tcpPort parses a TCP port, 1 to 65535.
func tcpPort(c *caddy.Controller, dst *int) error {
	v, err := single(c)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 65535 {
		return c.Errf("%s: %q is not a port from 1 to 65535", c.Val(), v)
	}
	*dst = n
	return nil
}

// checkAPIOptions checks what the admin API will check when it starts: credentials in pairs,
// the certificate and key, and authentication on an address that is not loopback.
func checkAPIOptions(o config.APIOptions) error {
	if !o.Enable {
		return nil
	}
	return apiConfig(o).Check(o.Addr())
}

func apiConfig(o config.APIOptions) admin.Config {
	return admin.Config{
		BasicUser: o.BasicUser, BasicPass: o.BasicPass, Token: o.Token,
		TLSCert: o.TLSCert, TLSKey: o.TLSKey, AllowUnauthenticated: o.AllowUnauthenticated,
	}
}

// apis lets the gslb blocks of a Corefile load, and of the next load, share admin API
// listeners (by address) and overrides stores (by storeKey). A Corefile reload starts the new
// instance before it stops the old one: the listener must neither be lost nor bound twice in
// between, and the overrides must stay. Like managers, it is package-level state for the same
// reason CoreDNS's own plugins keep their listeners in one.
var apis = &apiRegistry{servers: make(map[string]*admin.Server), stores: make(map[string]overlay.Store)}

type apiRegistry struct {
	mu      sync.Mutex
	servers map[string]*admin.Server // by listen address
	stores  map[string]overlay.Store // by storeKey
	uses    []*apiUse                // in order of acquisition
}

// apiUse is one gslb block's share of the admin API in one Corefile load: its listener, its
// overrides store, and the registration of its provider.
type apiUse struct {
	load       caddy.Context // the Corefile load of the block
	opts       config.APIOptions
	storeKey   string
	server     *admin.Server
	store      overlay.Store
	unregister func()
}

// Store returns the overrides store that the block's catalog applies.
func (u *apiUse) Store() overlay.Store { return u.store }

// setupAPI gives the gslb block at c, with API options o and cluster options cl, its share of
// the admin API: the listener and the overrides store, which it opens or shares. It returns nil
// when o does not enable the API. The share is released when the block's instance shuts down,
// and when a Corefile reload fails, the shares of the failed load are released.
func setupAPI(c *caddy.Controller, o config.APIOptions, cl config.ClusterOptions) (*apiUse, error) {
	if !o.Enable {
		return nil, nil
	}
	load := c.Context()
	u, err := apis.acquire(load, o, cl)
	if err != nil {
		return nil, err
	}
	c.OnShutdown(func() error {
		apis.release(u)
		return nil
	})
	// Runs on this load's instance when a reload from it fails: the new load never shuts down.
	c.OnRestartFailed(func() error {
		apis.keepOnly(load)
		return nil
	})
	return u, nil
}

// acquire returns a new share of the listener that o names and of the store that o and cl
// name, opening them when no block holds them yet, and applying o's credentials and TLS to the
// listener.
func (r *apiRegistry) acquire(load caddy.Context, o config.APIOptions, cl config.ClusterOptions) (*apiUse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	addr, key := o.Addr(), storeKey(o, cl)
	for _, u := range r.uses {
		switch {
		case u.load != load || u.opts.Addr() != addr:
		case u.opts != o:
			return nil, fmt.Errorf("two gslb blocks serve the admin API on %s with different api_* options", addr)
		case u.storeKey != key:
			return nil, fmt.Errorf("two gslb blocks serve the admin API on %s with different overrides stores: give them the same redis_* options", addr)
		}
	}
	store, where, opened := r.stores[key], "", false
	if store == nil {
		s, w, err := openStore(o, cl)
		if err != nil {
			return nil, err
		}
		store, where, opened = s, w, true
	}
	server := r.servers[addr]
	var err error
	if server == nil {
		server, err = admin.Listen(addr, apiConfig(o), store, log)
		if err == nil {
			scheme := "http"
			if o.TLSCert != "" {
				scheme = "https"
			}
			log.Infof("admin API at %s://%s/api/, dashboard at %[1]s://%[2]s/ui/", scheme, addr)
		}
	} else {
		err = server.Configure(apiConfig(o), store)
	}
	if err != nil {
		if opened {
			store.Close()
		}
		return nil, err
	}
	if opened {
		log.Infof("overrides in %s", where)
	}
	r.servers[addr], r.stores[key] = server, store
	u := &apiUse{load: load, opts: o, storeKey: key, server: server, store: store}
	r.uses = append(r.uses, u)
	return u, nil
}

// Register makes p, which serves zones, known to the block's admin API until the share is
// released.
func (u *apiUse) Register(zones []string, p admin.Provider) {
	apis.mu.Lock()
	defer apis.mu.Unlock()
	u.unregister = u.server.Register(zones, p)
}

// release ends the share u: its provider leaves the API, the listener takes the settings of
// the newest share left, and the listener and the store close when no share is left.
func (r *apiRegistry) release(u *apiUse) {
	r.mu.Lock()
	server, store := r.drop(u)
	r.mu.Unlock()
	if server != nil {
		if err := server.Close(); err != nil {
			log.Errorf("admin API on %s: %v", u.opts.Addr(), err)
		}
	}
	if store != nil {
		store.Close()
	}
}

// keepOnly releases every share that is not of load.
func (r *apiRegistry) keepOnly(load caddy.Context) {
	r.mu.Lock()
	others := slices.DeleteFunc(slices.Clone(r.uses), func(u *apiUse) bool { return u.load == load })
	r.mu.Unlock()
	for _, u := range others {
		r.release(u)
	}
}

// drop removes u, with r.mu held, and returns the server and the store that no share holds
// any more, for the caller to close.
func (r *apiRegistry) drop(u *apiUse) (*admin.Server, overlay.Store) {
	i := slices.Index(r.uses, u)
	if i < 0 {
		return nil, nil
	}
	r.uses = slices.Delete(r.uses, i, i+1)
	if u.unregister != nil {
		u.unregister()
	}
	addr := u.opts.Addr()
	var server *admin.Server
	if last := r.lastUse(func(x *apiUse) bool { return x.opts.Addr() == addr }); last == nil {
		server = r.servers[addr]
		delete(r.servers, addr)
	} else if err := last.server.Configure(apiConfig(last.opts), last.store); err != nil {
		log.Errorf("admin API on %s keeps its settings: %v", addr, err)
	}
	var store overlay.Store
	if r.lastUse(func(x *apiUse) bool { return x.storeKey == u.storeKey }) == nil {
		store = r.stores[u.storeKey]
		delete(r.stores, u.storeKey)
	}
	return server, store
}

// lastUse returns the newest share that f accepts, or nil.
func (r *apiRegistry) lastUse(f func(*apiUse) bool) *apiUse {
	for _, u := range slices.Backward(r.uses) {
		if f(u) {
			return u
		}
	}
	return nil
}

// storeKey identifies the overrides store of a block among the blocks and loads that share it:
// the overrides file, or in cluster mode the Redis options. Two stores of one Redis share the
// overrides, so a reload that changes the Redis credentials or TLS files opens a new client
// beside the old one rather than keep the old settings.
func storeKey(o config.APIOptions, cl config.ClusterOptions) string {
	if cl.Enable {
		return fmt.Sprintf("redis %+v", cl.WithDefaults())
	}
	return "file " + o.OverridesPath()
}

// openStore opens the overrides store of a block: in Redis in cluster mode, so that every
// instance applies the same overrides, in the overrides file otherwise. It returns where the
// overrides are, for the log.
func openStore(o config.APIOptions, cl config.ClusterOptions) (overlay.Store, string, error) {
	if !cl.Enable {
		s, err := overlay.OpenFile(o.OverridesPath(), overlay.SystemClock{})
		if err != nil {
			return nil, "", fmt.Errorf("api_overrides_file: %w", err)
		}
		return s, s.Path(), nil
	}
	if o.OverridesFile != "" {
		log.Warningf("api_overrides_file %s is not used: in cluster mode the overrides are kept in Redis", o.OverridesFile)
	}
	id := cluster.InstanceID()
	rdb, err := cluster.NewRedisClient(cl, "meridian-overrides-"+id)
	if err != nil {
		return nil, "", fmt.Errorf("overrides in Redis: %w", err)
	}
	s := overlay.OpenRedis(rdb, overlay.RedisOptions{Prefix: cl.WithDefaults().KeyPrefix, Name: id, Log: log})
	return s, fmt.Sprintf("Redis hash %s (cluster mode)", s.Key()), nil
}
