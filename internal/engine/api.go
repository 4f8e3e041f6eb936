package engine

import (
	"fmt"
	"slices"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/cluster"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/overlay"
)

// CheckAPIOptions checks what the admin API will check when it starts: credentials in pairs,
// the certificate and key, and authentication on an address that is not loopback.
func CheckAPIOptions(o config.APIOptions) error {
	if !o.Enable {
		return nil
	}
	if err := apiConfig(o).Check(o.Addr()); err != nil {
		return &APIError{err}
	}
	return nil
}

func apiConfig(o config.APIOptions) admin.Config {
	return admin.Config{
		BasicUser: o.BasicUser, BasicPass: o.BasicPass, Token: o.Token,
		TLSCert: o.TLSCert, TLSKey: o.TLSKey, AllowUnauthenticated: o.AllowUnauthenticated,
		CredentialsFile: o.CredentialsFile,
		AuditFile:       o.AuditPath(), AuditMaxSize: o.AuditMaxSize, AuditKeep: o.AuditKeep,
	}
}

// apiUse is one engine's share of the admin API: its listener, its overrides store, and the
// registration of the engine as the provider of its zones.
type apiUse struct {
	load       any // the Corefile load of the engine
	opts       config.APIOptions
	storeKey   string
	server     *admin.Server
	store      overlay.Store
	unregister func()
}

// acquireAPI returns a new share of the listener that o names and of the store that o and cl
// name, opening them when no engine holds them yet, and applying o's credentials and TLS to
// the listener. The listener is bound here, so that a port in use fails the Corefile load; it
// serves once an engine starts.
func (r *Registry) acquireAPI(load any, o config.APIOptions, cl config.ClusterOptions, log Logger) (*apiUse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	addr, key := o.Addr(), storeKey(o, cl)
	for _, e := range r.engines {
		u := e.api
		switch {
		case u == nil || u.load != load || u.opts.Addr() != addr:
		case u.opts != o:
			return nil, fmt.Errorf("two gslb blocks serve the admin API on %s with different api_* options", addr)
		case u.storeKey != key:
			return nil, fmt.Errorf("two gslb blocks serve the admin API on %s with different overrides stores: give them the same redis_* options", addr)
		}
	}
	store, where, opened := r.stores[key], "", false
	if store == nil {
		s, w, err := openStore(o, cl, log)
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
	return &apiUse{load: load, opts: o, storeKey: key, server: server, store: store}, nil
}

// startAPI serves the API of u, registering p for zones until the share is released.
func (r *Registry) startAPI(u *apiUse, zones []string, p admin.Provider) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u.store.Start()
	u.server.Serve()
	if u.unregister == nil {
		u.unregister = u.server.Register(zones, p)
	}
}

// releaseAPI ends the share u, which e held: its provider leaves the API, the listener takes
// the settings of the newest share left, and the listener and the store close when no share is
// left. Call it after e is untracked.
func (r *Registry) releaseAPI(u *apiUse, log Logger) {
	r.mu.Lock()
	server, store := r.dropAPI(u, log)
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

// dropAPI takes u out, with r.mu held, and returns the server and the store that no share
// holds any more, for the caller to close.
func (r *Registry) dropAPI(u *apiUse, log Logger) (*admin.Server, overlay.Store) {
	if u.unregister != nil {
		u.unregister()
	}
	addr := u.opts.Addr()
	var server *admin.Server
	if last := r.lastAPIUse(func(x *apiUse) bool { return x.opts.Addr() == addr }); last == nil {
		server = r.servers[addr]
		delete(r.servers, addr)
	} else if err := last.server.Configure(apiConfig(last.opts), last.store); err != nil {
		log.Errorf("admin API on %s keeps its settings: %v", addr, err)
	}
	var store overlay.Store
	if r.lastAPIUse(func(x *apiUse) bool { return x.storeKey == u.storeKey }) == nil {
		store = r.stores[u.storeKey]
		delete(r.stores, u.storeKey)
	}
	return server, store
}

// lastAPIUse returns the newest share of a tracked engine that f accepts, or nil.
func (r *Registry) lastAPIUse(f func(*apiUse) bool) *apiUse {
	for _, e := range slices.Backward(r.engines) {
		if e.api != nil && f(e.api) {
			return e.api
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
func openStore(o config.APIOptions, cl config.ClusterOptions, log Logger) (overlay.Store, string, error) {
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
	rdb, err := cluster.NewRedisClient(cl, "meridian-overrides-"+id, log)
	if err != nil {
		return nil, "", fmt.Errorf("overrides in Redis: %w", err)
	}
	s := overlay.OpenRedis(rdb, overlay.RedisOptions{Prefix: cl.WithDefaults().KeyPrefix, Name: id, Log: log})
	return s, fmt.Sprintf("Redis hash %s (cluster mode)", s.Key()), nil
}

// APIError is an error of an engine's share of the admin API: its options, its listener or its
// overrides store. The adapter reports it at the Corefile line of the api_* options.
type APIError struct{ Err error }

// Error implements error.
func (e *APIError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *APIError) Unwrap() error { return e.Err }
