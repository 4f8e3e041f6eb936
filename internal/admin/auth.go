package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// credentials are the configured secrets, hashed so that comparisons take the same time
// whatever the length or content of what a client sends.
type credentials struct {
	basic, bearer     bool
	user, pass, token [sha256.Size]byte
}

func newCredentials(cfg Config) credentials {
	return credentials{
		basic:  cfg.BasicUser != "",
		bearer: cfg.Token != "",
		user:   sha256.Sum256([]byte(cfg.BasicUser)),
		pass:   sha256.Sum256([]byte(cfg.BasicPass)),
		token:  sha256.Sum256([]byte(cfg.Token)),
	}
}

// required reports whether requests must authenticate.
func (c credentials) required() bool { return c.basic || c.bearer }

// check reports whether r carries valid credentials, and who it is: the basic user, or
// "token" for a bearer token.
func (c credentials) check(r *http.Request) (who string, ok bool) {
	if c.bearer {
		if scheme, tok, found := strings.Cut(r.Header.Get("Authorization"), " "); found && strings.EqualFold(scheme, "Bearer") {
			return "token", same(tok, c.token)
		}
	}
	if c.basic {
		if user, pass, found := r.BasicAuth(); found {
			// Both comparisons run, so that a wrong user takes as long as a wrong password.
			okUser, okPass := same(user, c.user), same(pass, c.pass)
			return user, okUser && okPass
		}
	}
	return "", false
}

func same(given string, want [sha256.Size]byte) bool {
	h := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(h[:], want[:]) == 1
}

type userKey struct{}

// userOf returns who made the request, as authenticated; empty without authentication.
func userOf(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// withUser returns ctx as a request of user makes it: the components of a block that change
// the overrides act as users of their own.
func withUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// authenticate lets a request through to next when it carries valid credentials, or when the
// server has none. A server without credentials (on loopback, or allowed explicitly) answers
// only requests addressed to an IP address or localhost unless allowed explicitly, so that a web
// page cannot reach it through a DNS name that resolves to 127.0.0.1 (DNS rebinding).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := s.settings.Load()
		if !st.creds.required() {
			if !st.cfg.AllowUnauthenticated && !literalHost(r.Host) {
				writeError(w, http.StatusForbidden, "without authentication, the admin API answers only requests to an IP address or localhost")
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		who, ok := st.creds.check(r)
		if !ok {
			// The dashboard asks for credentials itself: a challenge would make the browser
			// open its own dialog.
			if r.Header.Get("X-Requested-With") == "" {
				if st.creds.basic {
					w.Header().Add("WWW-Authenticate", `Basic realm="meridian", charset="UTF-8"`)
				}
				if st.creds.bearer {
					w.Header().Add("WWW-Authenticate", `Bearer realm="meridian"`)
				}
			}
			writeError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		next.ServeHTTP(w, r.WithContext(withUser(r.Context(), who)))
	})
}

// literalHost reports whether the Host header names an IP address or localhost.
func literalHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}
