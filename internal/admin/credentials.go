package admin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"
	"gopkg.in/yaml.v3"

	"github.com/meridian-gslb/meridian/internal/config"
)

// Role is what an authenticated client may do through the API. Each role may do what the
// roles before it may.
type Role int

// The roles, in increasing order of rights.
const (
	// RoleRead reads: status, backends, history, transitions, explain, sites.
	RoleRead Role = iota + 1
	// RoleOperate also changes overrides (enable, disable, drain, force-up, clear, scheduled
	// drains, CoreDNS-GSLB's bulk actions and pools) and reads the audit log.
	RoleOperate
	// RoleAdmin may do everything: also reload the configuration.
	RoleAdmin
)

// roleNames are the names of the roles, in the credentials file and the API.
var roleNames = map[Role]string{RoleRead: "read", RoleOperate: "operate", RoleAdmin: "admin"}

// String returns the role's name: read, operate or admin.
func (r Role) String() string { return roleNames[r] }

// MarshalText writes the role's name.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a role's name; empty for none.
func (r *Role) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*r = 0
		return nil
	}
	role, ok := ParseRole(string(b))
	if !ok {
		return fmt.Errorf("unknown role %q (valid: read, operate, admin)", b)
	}
	*r = role
	return nil
}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, bool) {
	for r, name := range roleNames {
		if name == s {
			return r, true
		}
	}
	return 0, false
}

// Credential is one entry of the credentials file: a user who signs in with a password (HTTP
// basic authentication), or a named token (a bearer token), and its role.
type Credential struct {
	Name string
	Role Role
	// Exactly one of them is set. Password and PasswordBcrypt make a basic-authentication
	// user called Name; Token and TokenSHA256 a bearer token that the audit log calls Name.
	Password, PasswordBcrypt string
	Token                    string
	TokenSHA256              [sha256.Size]byte
	hasTokenHash             bool
}

// isToken reports whether c is a bearer token, not a user.
func (c Credential) isToken() bool { return c.Token != "" || c.hasTokenHash }

// credentialFields are the keys of an entry of the credentials file.
var credentialFields = []string{"name", "role", "password", "password_bcrypt", "token", "token_sha256"}

// LoadCredentials reads the credentials file (api_credentials) at path:
//
//	credentials:
//	  - name: alice
//	    role: admin
//	    password_bcrypt: "$2y$10$..."   # htpasswd -nbB alice PASSWORD
//	  - name: grafana
//	    role: read
//	    token_sha256: "9f86d08..."      # printf %s TOKEN | sha256sum
//
// Each entry has a name, a role (read, operate or admin) and one secret: password or
// password_bcrypt for a user, token or token_sha256 for a token. Every problem is reported,
// with the file, line, column and field.
func LoadCredentials(path string) ([]Credential, error) {
	data, err := config.ReadFile(path, 0)
	if err != nil {
		return nil, fmt.Errorf("api_credentials: %w", err)
	}
	return ParseCredentials(path, data)
}

// ParseCredentials parses the content of a credentials file; see LoadCredentials.
func ParseCredentials(file string, data []byte) ([]Credential, error) {
	f := config.NewYAMLFile(file, len(data))
	root, ok := f.Document(data, "a credentials file")
	if !ok {
		return nil, f.Errors()
	}
	root = config.YAMLResolve(root)
	if root == nil || root.Kind != yaml.MappingNode {
		f.Errorf(root, "", "want a mapping with a list of credentials under \"credentials\"")
		return nil, f.Errors()
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Value == "credentials" {
			list = config.YAMLResolve(root.Content[i+1])
		} else {
			f.Errorf(k, k.Value, "unknown field (valid: credentials)")
		}
	}
	if list == nil || list.Kind != yaml.SequenceNode {
		f.Errorf(list, "credentials", "want a list of credentials")
		return nil, f.Errors()
	}
	var out []Credential
	users, tokens := map[string]bool{}, map[string]bool{}
	for i, n := range list.Content {
		path := fmt.Sprintf("credentials[%d]", i)
		c, ok := parseCredential(f, config.YAMLResolve(n), path)
		if !ok {
			continue
		}
		seen := users
		if c.isToken() {
			seen = tokens
		}
		if seen[c.Name] {
			f.Errorf(n, path+".name", "%s is listed twice as a %s", c.Name, kindOf(c))
			continue
		}
		seen[c.Name] = true
		out = append(out, c)
	}
	if f.Len() > 0 {
		return nil, f.Errors()
	}
	return out, nil
}

func kindOf(c Credential) string {
	if c.isToken() {
		return "token"
	}
	return "user"
}

// parseCredential reads one entry of the list.
func parseCredential(f *config.YAMLFile, n *yaml.Node, path string) (Credential, bool) {
	var c Credential
	if n == nil || n.Kind != yaml.MappingNode {
		f.Errorf(n, path, "want a mapping with name, role and a secret, got %s", config.YAMLKind(n))
		return c, false
	}
	errs := f.Len()
	secrets, named, roled := 0, false, false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], config.YAMLResolve(n.Content[i+1])
		field := path + "." + k.Value
		if v.Kind != yaml.ScalarNode || v.Value == "" {
			f.Errorf(v, field, "want a non-empty string")
			continue
		}
		switch k.Value {
		case "name":
			c.Name, named = v.Value, true
			if strings.ContainsAny(c.Name, ":\n") {
				f.Errorf(v, field, "a name holds no colon and no line break")
			}
		case "role":
			roled = true
			if err := c.Role.UnmarshalText([]byte(v.Value)); err != nil {
				f.Errorf(v, field, "%v", err)
			}
		case "password":
			c.Password = v.Value
			secrets++
		case "password_bcrypt":
			if _, err := bcrypt.Cost([]byte(v.Value)); err != nil {
				f.Errorf(v, field, "not a bcrypt hash (htpasswd -nbB NAME PASSWORD writes one): %v", err)
			}
			c.PasswordBcrypt = v.Value
			secrets++
		case "token":
			c.Token = v.Value
			secrets++
		case "token_sha256":
			b, err := hex.DecodeString(v.Value)
			if err != nil || len(b) != sha256.Size {
				f.Errorf(v, field, "want the SHA-256 of the token, 64 hexadecimal digits (printf %%s TOKEN | sha256sum)")
			}
			copy(c.TokenSHA256[:], b)
			c.hasTokenHash = true
			secrets++
		default:
			f.Errorf(k, field, "unknown field (valid: %s)", strings.Join(credentialFields, ", "))
		}
	}
	switch {
	case f.Len() > errs: // what is missing may be what was wrong
	case !named:
		f.Errorf(n, path+".name", "missing: every credential has a name, which the audit log records")
	case !roled:
		f.Errorf(n, path+".role", "missing: read, operate or admin")
	case secrets != 1:
		f.Errorf(n, path, "want exactly one of password, password_bcrypt, token and token_sha256, got %d", secrets)
	}
	return c, f.Len() == errs
}
