package admin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"

	"golang.org/x/crypto/bcrypt"
)

// Identity is who made a request, as the API authenticated it.
type Identity struct {
	// Name is the basic-authentication user or the token's name; empty when the API has no
	// credentials.
	Name string `json:"name"`
	Role Role   `json:"role"`
	// Auth is how the request authenticated: basic, token, or none (an API without
	// credentials, where every request may do everything).
	Auth string `json:"auth"`
}

// The values of Identity.Auth.
const (
	authBasic = "basic"
	authToken = "token"
	authNone  = "none"
)

// credentials are the configured secrets, hashed so that comparisons take the same time
// whatever the length or content of what a client sends.
type credentials struct {
	users  []*user
	tokens []token
	// dummy is a bcrypt hash that an unknown user's password is compared with when some user
	// has a bcrypt password, so that an unknown user takes as long as a wrong password.
	dummy []byte
}

// user is a basic-authentication user.
type user struct {
	name     string
	nameHash [sha256.Size]byte
	role     Role
	// pass is the SHA-256 of a clear password; bcrypt the hash of the other kind.
	pass   [sha256.Size]byte
	bcrypt []byte
	// verified is the SHA-256 of the last password bcrypt accepted, so that the dashboard's
	// requests every two seconds do not each cost a bcrypt comparison.
	verified atomic.Pointer[[sha256.Size]byte]
}

// token is a bearer token: the SHA-256 of its secret.
type token struct {
	name   string
	role   Role
	digest [sha256.Size]byte
}

// legacyName is what the audit log and the overrides call the token of api_token.
const legacyName = "token"

// newCredentials returns the credentials of cfg: api_basic_user and api_token (role admin),
// and the entries of the credentials file.
func newCredentials(cfg Config, list []Credential) (credentials, error) {
	var c credentials
	if cfg.BasicUser != "" {
		list = append(list, Credential{Name: cfg.BasicUser, Role: RoleAdmin, Password: cfg.BasicPass})
	}
	if cfg.Token != "" {
		list = append(list, Credential{Name: legacyName, Role: RoleAdmin, Token: cfg.Token})
	}
	cost := 0
	for _, e := range list {
		switch {
		case e.Token != "":
			c.tokens = append(c.tokens, token{name: e.Name, role: e.Role, digest: sha256.Sum256([]byte(e.Token))})
		case e.hasTokenHash:
			c.tokens = append(c.tokens, token{name: e.Name, role: e.Role, digest: e.TokenSHA256})
		default:
			u := &user{name: e.Name, nameHash: sha256.Sum256([]byte(e.Name)), role: e.Role, pass: sha256.Sum256([]byte(e.Password))}
			if e.PasswordBcrypt != "" {
				u.bcrypt = []byte(e.PasswordBcrypt)
				cost, _ = bcrypt.Cost(u.bcrypt)
			}
			c.users = append(c.users, u)
		}
	}
	if cost > 0 {
		dummy, err := bcrypt.GenerateFromPassword([]byte("no such user"), cost)
		if err != nil {
			return c, err
		}
		c.dummy = dummy
	}
	return c, nil
}

// required reports whether requests must authenticate.
func (c credentials) required() bool { return len(c.users) > 0 || len(c.tokens) > 0 }

// check reports whether r carries valid credentials, and whose.
func (c credentials) check(r *http.Request) (Identity, bool) {
	if len(c.tokens) > 0 {
		if scheme, tok, found := strings.Cut(r.Header.Get("Authorization"), " "); found && strings.EqualFold(scheme, "Bearer") {
			return c.checkToken(tok)
		}
	}
	if len(c.users) > 0 {
		if name, pass, found := r.BasicAuth(); found {
			return c.checkUser(name, pass)
		}
	}
	return Identity{}, false
}

// checkToken compares the token with every configured one, all of them.
func (c credentials) checkToken(tok string) (Identity, bool) {
	digest := sha256.Sum256([]byte(tok))
	var id Identity
	found := false
	for _, t := range c.tokens {
		if subtle.ConstantTimeCompare(digest[:], t.digest[:]) == 1 {
			id, found = Identity{Name: t.name, Role: t.role, Auth: authToken}, true
		}
	}
	return id, found
}

// checkUser finds the user name among all of them, then checks its password; an unknown name
// costs what a wrong password does.
func (c credentials) checkUser(name, pass string) (Identity, bool) {
	nameHash, passHash := sha256.Sum256([]byte(name)), sha256.Sum256([]byte(pass))
	var u *user
	for _, x := range c.users {
		if subtle.ConstantTimeCompare(nameHash[:], x.nameHash[:]) == 1 {
			u = x
		}
	}
	switch {
	case u == nil:
		if c.dummy != nil {
			_ = bcrypt.CompareHashAndPassword(c.dummy, []byte(pass))
		}
		return Identity{}, false
	case u.bcrypt == nil:
		if subtle.ConstantTimeCompare(passHash[:], u.pass[:]) != 1 {
			return Identity{}, false
		}
	default:
		if v := u.verified.Load(); v == nil || !bytes.Equal(v[:], passHash[:]) {
			if bcrypt.CompareHashAndPassword(u.bcrypt, []byte(pass)) != nil {
				return Identity{}, false
			}
			u.verified.Store(&passHash)
		}
	}
	return Identity{Name: u.name, Role: u.role, Auth: authBasic}, true
}

type identityKey struct{}

// identityOf returns who made the request: the admin role without authentication.
func identityOf(ctx context.Context) Identity {
	if id, ok := ctx.Value(identityKey{}).(Identity); ok {
		return id
	}
	return Identity{Role: RoleAdmin, Auth: authNone}
}

// userOf returns who made the request, as authenticated; empty without authentication.
func userOf(ctx context.Context) string { return identityOf(ctx).Name }

// withUser returns ctx as a request of user makes it, with the role and authentication of
// ctx's identity: the components of a block that change the overrides act as users of their
// own.
func withUser(ctx context.Context, user string) context.Context {
	id := identityOf(ctx)
	id.Name = user
	return context.WithValue(ctx, identityKey{}, id)
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
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, Identity{Role: RoleAdmin, Auth: authNone})))
			return
		}
		id, ok := st.creds.check(r)
		if !ok {
			refusals.WithLabelValues("unauthenticated").Inc()
			// The dashboard asks for credentials itself: a challenge would make the browser
			// open its own dialog.
			if r.Header.Get("X-Requested-With") == "" {
				if len(st.creds.users) > 0 {
					w.Header().Add("WWW-Authenticate", `Basic realm="meridian", charset="UTF-8"`)
				}
				if len(st.creds.tokens) > 0 {
					w.Header().Add("WWW-Authenticate", `Bearer realm="meridian"`)
				}
			}
			writeError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	})
}

// authorize lets a request through to next when its identity has role at least.
func authorize(role Role, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if id := identityOf(r.Context()); id.Role < role {
			refusals.WithLabelValues("forbidden").Inc()
			writeError(w, http.StatusForbidden, "forbidden: "+who(id)+" has the role "+id.Role.String()+", and this needs "+role.String())
			return
		}
		next(w, r)
	}
}

// who names id for people: the user, token NAME, or anonymous.
func who(id Identity) string {
	switch id.Auth {
	case authToken:
		return "token " + id.Name
	case authBasic:
		return "user " + id.Name
	}
	return "anonymous"
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
