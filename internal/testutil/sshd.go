package testutil

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// SSHTestUser is the system account a test's sshd lets log in with a password. StartSSHD
// creates it (home directory /, so that logins print no warning; shell /bin/sh) when it does
// not exist.
const SSHTestUser = "meridian-test"

// sshdStartTimeout bounds one start of sshd, until it sends its banner.
const sshdStartTimeout = 10 * time.Second

// SSHD is an OpenSSH server a test started on a free 127.0.0.1 port, with a configuration, a
// host key and a PID file of its own in a temporary directory. It accepts password logins of
// SSHTestUser only, and is stopped, by its PID, when the test ends.
type SSHD struct {
	// Addr is the server's address, 127.0.0.1:port.
	Addr string
	// User and Password are the account that may log in.
	User, Password string
	// HostKey is the server's public host key, as a known_hosts line has it after the host
	// ("ssh-ed25519 AAAA...").
	HostKey string
	cmd     *exec.Cmd
	out     *syncBuffer
	done    chan struct{}
}

var sshTestAccount struct {
	once     sync.Once
	password string
	err      error
}

// StartSSHD starts Debian's sshd for the test. Password logins need a system account, which
// only root can create and give a password: the test is skipped when it does not run as root,
// and when sshd is not installed (Debian package openssh-server; make deps installs it).
func StartSSHD(t testing.TB) *SSHD {
	t.Helper()
	bin, err := exec.LookPath("sshd")
	if err != nil {
		bin = "/usr/sbin/sshd"
		if _, statErr := os.Stat(bin); statErr != nil {
			t.Skip("sshd is not installed (Debian package openssh-server)")
		}
	}
	if bin, err = filepath.Abs(bin); err != nil { // sshd re-executes itself: it needs its absolute path
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		t.Skipf("sshd password logins need a system account with a password (%s), which only root can create", SSHTestUser)
	}
	password, err := sshAccount()
	if err != nil {
		t.Fatalf("sshd: the test account %s: %v", SSHTestUser, err)
	}
	// sshd refuses to start without its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("sshd: %v", err)
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "host_ed25519_key")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for range 3 {
		s := &SSHD{User: SSHTestUser, Password: password, HostKey: strings.TrimSpace(string(pub)), out: &syncBuffer{}, done: make(chan struct{})}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
		conf := filepath.Join(dir, "sshd_config")
		if err := os.WriteFile(conf, []byte(sshdConfig(s.Addr, key, dir)), 0o600); err != nil {
			t.Fatal(err)
		}
		s.cmd = exec.Command(bin, "-D", "-e", "-f", conf)
		s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
		if err := s.cmd.Start(); err != nil {
			t.Fatalf("start sshd: %v", err)
		}
		go func() { _ = s.cmd.Wait(); close(s.done) }()
		if lastErr = s.waitBanner(); lastErr == nil {
			t.Cleanup(s.Stop)
			return s
		}
		s.Stop()
	}
	t.Fatalf("sshd did not start: %v", lastErr)
	return nil
}

// sshdConfig is a server on addr that takes passwords of SSHTestUser and nothing else.
func sshdConfig(addr, hostKey, dir string) string {
	return fmt.Sprintf(`ListenAddress %s
HostKey %s
PidFile %s
UsePAM no
PasswordAuthentication yes
KbdInteractiveAuthentication no
PubkeyAuthentication no
AuthorizedKeysFile none
PermitRootLogin no
AllowUsers %s
UseDNS no
PrintMotd no
LogLevel VERBOSE
`, addr, hostKey, filepath.Join(dir, "sshd.pid"), SSHTestUser)
}

// sshAccount makes sure SSHTestUser exists and gives it a new random password, once per test
// process, and returns the password.
func sshAccount() (string, error) {
	a := &sshTestAccount
	a.once.Do(func() {
		if _, err := user.Lookup(SSHTestUser); err != nil {
			out, err := exec.Command("useradd", "--system", "--home-dir", "/", "--no-create-home", "--shell", "/bin/sh", SSHTestUser).CombinedOutput()
			if err != nil {
				a.err = fmt.Errorf("useradd: %v: %s", err, strings.TrimSpace(string(out)))
				return
			}
		}
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		password := hex.EncodeToString(b)
		cmd := exec.Command("chpasswd")
		cmd.Stdin = strings.NewReader(SSHTestUser + ":" + password + "\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			a.err = fmt.Errorf("chpasswd: %v: %s", err, strings.TrimSpace(string(out)))
			return
		}
		a.password = password
	})
	return a.password, a.err
}

// waitBanner waits until the server sends its SSH banner, or exits.
func (s *SSHD) waitBanner() error {
	deadline := time.Now().Add(sshdStartTimeout)
	for {
		select {
		case <-s.done:
			return fmt.Errorf("sshd on %s exited: %s", s.Addr, s.out.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond); err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "SSH-2.0-") {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sshd on %s not ready after %s: %s", s.Addr, sshdStartTimeout, s.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Log returns what sshd wrote so far.
func (s *SSHD) Log() string { return s.out.String() }

// Stop ends the server, by its PID, and waits for it.
func (s *SSHD) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = syscall.Kill(s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}
