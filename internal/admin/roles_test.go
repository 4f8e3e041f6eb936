package admin

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/meridian-gslb/meridian/internal/overlay"
)

// writeCredentials writes a credentials file with a user and a token of each role.
func writeCredentials(t *testing.T) string {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte("alice-pass"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("deploy-token"))
	file := filepath.Join(t.TempDir(), "credentials.yml")
	data := "credentials:\n" +
		"  - {name: alice, role: admin, password_bcrypt: '" + string(hash) + "'}\n" +
		"  - {name: bob, role: read, password: bob-pass}\n" +
		"  - {name: grafana, role: read, token: grafana-token}\n" +
		"  - {name: deploy, role: operate, token_sha256: " + hex.EncodeToString(sum[:]) + "}\n"
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestRoles(t *testing.T) {
	store := overlay.NewMemory(overlay.SystemClock{})
	_, base := startServer(t, Config{CredentialsFile: writeCredentials(t), Token: "legacy"}, store, exampleProvider())
	drain := `{"keys":["www.example.org.|10.2.0.1|0"],"reason":"r"}`
	for _, c := range []struct {
		name, auth string
		who        Identity
		// The status of reading, of draining and of reloading.
		read, operate, admin int
	}{
		{"read token", "Bearer grafana-token", Identity{"grafana", RoleRead, "token"}, 200, 403, 403},
		{"read user", basic("bob", "bob-pass"), Identity{"bob", RoleRead, "basic"}, 200, 403, 403},
		{"operate token (hashed)", "Bearer deploy-token", Identity{"deploy", RoleOperate, "token"}, 200, 200, 403},
		{"admin user (bcrypt)", basic("alice", "alice-pass"), Identity{"alice", RoleAdmin, "basic"}, 200, 200, 200},
		{"admin user again (cached)", basic("alice", "alice-pass"), Identity{"alice", RoleAdmin, "basic"}, 200, 200, 200},
		{"api_token is admin", "Bearer legacy", Identity{"token", RoleAdmin, "token"}, 200, 200, 200},
		{"wrong bcrypt password", basic("alice", "alice-pas"), Identity{}, 401, 401, 401},
		{"unknown user", basic("carol", "alice-pass"), Identity{}, 401, 401, 401},
		{"sha256 as token", "Bearer " + strings.Repeat("0", 64), Identity{}, 401, 401, 401},
	} {
		h := []string{"Authorization", c.auth}
		code, body := call(t, "GET", base+"/api/v1/whoami", "", h...)
		if code != c.read {
			t.Errorf("%s: whoami %d %s", c.name, code, body)
		} else if code == 200 {
			if got := decode[Identity](t, body); got != c.who {
				t.Errorf("%s: whoami %+v, want %+v", c.name, got, c.who)
			}
		}
		if code, body := call(t, "POST", base+"/api/v1/backends/drain", drain, h...); code != c.operate {
			t.Errorf("%s: drain %d %s", c.name, code, body)
		} else if code == 403 && !strings.Contains(body, "this needs operate") {
			t.Errorf("%s: refusal %s", c.name, body)
		}
		if code, body := call(t, "GET", base+"/api/v1/audit", "", h...); code != c.operate {
			t.Errorf("%s: audit %d %s", c.name, code, body)
		}
		if code, body := call(t, "POST", base+"/api/v1/reload", "{}", h...); code != c.admin {
			t.Errorf("%s: reload %d %s", c.name, code, body)
		}
		if code, _ := call(t, "PUT", base+"/api/v1/zones/example.org/records/www.example.org/backends", `{"backends":[]}`, append(h, "Content-Type", "application/json")...); code != c.operate {
			t.Errorf("%s: pool %d", c.name, code)
		}
	}
	if o, ok := store.Get("www.example.org.|10.2.0.1|0"); !ok || o.From != "127.0.0.1" {
		t.Errorf("override %+v: want who and from", o)
	}
}

func TestCredentialsFileErrors(t *testing.T) {
	for _, c := range []struct{ name, data, want string }{
		{"not a mapping", "- a\n", "1:1: want a mapping"},
		{"unknown top field", "users: []\n", "1:1: users: unknown field"},
		{"no list", "credentials: x\n", "credentials: want a list"},
		{"unknown role", "credentials:\n  - {name: a, role: root, token: t}\n", `2:21: credentials[0].role: unknown role "root"`},
		{"no secret", "credentials:\n  - {name: a, role: read}\n", "credentials[0]: want exactly one of password"},
		{"two secrets", "credentials:\n  - {name: a, role: read, token: t, password: p}\n", "got 2"},
		{"no name", "credentials:\n  - {role: read, token: t}\n", "credentials[0].name: missing"},
		{"no role", "credentials:\n  - {name: a, token: t}\n", "credentials[0].role: missing"},
		{"bad bcrypt", "credentials:\n  - {name: a, role: read, password_bcrypt: xyz}\n", "not a bcrypt hash"},
		{"bad sha256", "credentials:\n  - {name: a, role: read, token_sha256: abc}\n", "64 hexadecimal digits"},
		{"unknown field", "credentials:\n  - {name: a, role: read, token: t, note: x}\n", "credentials[0].note: unknown field"},
		{"twice", "credentials:\n  - {name: a, role: read, token: t}\n  - {name: a, role: admin, token: u}\n", "credentials[1].name: a is listed twice as a token"},
		{"colon in name", "credentials:\n  - {name: 'a:b', role: read, password: p}\n", "no colon"},
	} {
		_, err := ParseCredentials("creds.yml", []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "creds.yml:") {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// A user and a token may share a name.
	list, err := ParseCredentials("creds.yml", []byte("credentials:\n  - {name: a, role: read, token: t}\n  - {name: a, role: admin, password: p}\n"))
	if err != nil || len(list) != 2 {
		t.Errorf("a user and a token called a: %v %v", list, err)
	}
	// A credentials file that does not load refuses the settings, and the server keeps its own.
	bad := filepath.Join(t.TempDir(), "bad.yml")
	os.WriteFile(bad, []byte("credentials:\n  - {name: a}\n"), 0o600)
	if err := (Config{CredentialsFile: bad}).Check("127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "bad.yml:2") {
		t.Errorf("Check: %v", err)
	}
	if err := (Config{CredentialsFile: writeCredentials(t), BasicUser: "bob", BasicPass: "x"}).Check("127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "both api_basic_user") {
		t.Errorf("user twice: %v", err)
	}
	if err := (Config{CredentialsFile: writeCredentials(t)}).Check("0.0.0.0:0"); err != nil {
		t.Errorf("credentials are authentication on an open address: %v", err)
	}
	_, base := startServer(t, Config{}, nil, exampleProvider())
	if code, body := call(t, "GET", base+"/api/v1/whoami", ""); code != http.StatusOK || decode[Identity](t, body) != (Identity{Role: RoleAdmin, Auth: "none"}) {
		t.Errorf("without credentials: %d %s", code, body)
	}
}

// TestCredentialsExample loads the credentials file of docs/api.md and signs in with its
// users and tokens.
func TestCredentialsExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "```yaml\ncredentials:\n")
	example, _, found := strings.Cut(rest, "```")
	if !found {
		t.Fatal("docs/api.md has no credentials example")
	}
	file := filepath.Join(t.TempDir(), "credentials.yml")
	os.WriteFile(file, []byte("credentials:\n"+example), 0o600)
	_, base := startServer(t, Config{CredentialsFile: file}, nil, exampleProvider())
	for auth, want := range map[string]Identity{
		basic("alice", "alice-example-password"):        {"alice", RoleAdmin, "basic"},
		basic("oncall", "correct horse battery staple"): {"oncall", RoleOperate, "basic"},
		"Bearer grafana-example-token":                  {"grafana", RoleRead, "token"},
		"Bearer 9b1c3e6f0a2d4b7c":                       {"deploy-pipeline", RoleOperate, "token"},
	} {
		code, body := call(t, "GET", base+"/api/v1/whoami", "", "Authorization", auth)
		if code != http.StatusOK || decode[Identity](t, body) != want {
			t.Errorf("%s: %d %s, want %+v", want.Name, code, body, want)
		}
	}
}
