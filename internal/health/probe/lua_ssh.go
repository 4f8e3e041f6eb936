package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	lua "github.com/yuin/gopher-lua"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// luaSSHTimeout is ssh_exec's own timeout when the script gives none, CoreDNS-GSLB's; the
// check's timeout bounds it in any case.
const luaSSHTimeout = 5 * time.Second

// sshExec is ssh_exec(host, user, password, command[, timeout]) -> output. It logs in with the
// password and runs command; the output is what the command wrote to stdout and stderr
// (the first 64 KiB). A login that fails, a command that exits non-zero or is killed, and a
// timeout are failures: "" and the error message. host is a host name or address, port 22,
// or host:port (Meridian's: CoreDNS-GSLB always dials port 22).
//
// Without the check's ssh_known_hosts the server's host key is not verified, as in
// CoreDNS-GSLB: any key is accepted, so the password goes to whoever answers at host.
func (r *luaRun) sshExec(L *lua.LState) int {
	host, user, password, command := L.CheckString(1), L.CheckString(2), L.CheckString(3), L.CheckString(4)
	timeout := luaArgSeconds(L, 5, luaSSHTimeout)
	ctx := L.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	out, err := sshRun(ctx, r.hostKey, host, user, password, command, timeout)
	if err != nil {
		return r.fail(L, lua.LString(""), "ssh_exec", err)
	}
	L.Push(lua.LString(out))
	return 1
}

// sshHostKeys returns the host key check of ssh_exec: the keys of the known_hosts file when
// one is given, with the file's content (part of the check's identity); else any key.
func sshHostKeys(file string) (ssh.HostKeyCallback, string, error) {
	if file == "" {
		return ssh.InsecureIgnoreHostKey(), "", nil // as CoreDNS-GSLB: see sshExec
	}
	content, err := os.ReadFile(file)
	if err != nil {
		return nil, "", err
	}
	check, err := knownhosts.New(file)
	if err != nil {
		return nil, "", err
	}
	return check, string(content), nil
}

// sshRun logs in to host as user with password, checking its key with hostKey, and runs
// command, within ctx and timeout, and returns its combined output.
func sshRun(ctx context.Context, hostKey ssh.HostKeyCallback, host, user, password, command string, timeout time.Duration) (string, error) {
	addr := host
	if _, _, err := net.SplitHostPort(host); err != nil {
		addr = net.JoinHostPort(host, "22")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", sshTimeout(ctx, err, timeout)
	}
	defer conn.Close()
	// The SSH library has no context: the deadline bounds the handshake and the command, and
	// closing the connection ends them when the check's context ends first.
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	config := &ssh.ClientConfig{
		User:            user,
		Auth:            []ssh.AuthMethod{ssh.Password(password)},
		HostKeyCallback: hostKey,
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, config)
	if err != nil {
		return "", sshTimeout(ctx, err, timeout)
	}
	client := ssh.NewClient(c, chans, reqs)
	defer client.Close()
	session, err := client.NewSession()
	if err != nil {
		return "", sshTimeout(ctx, fmt.Errorf("session: %w", err), timeout)
	}
	defer session.Close()
	out := &execBuffer{}
	session.Stdout, session.Stderr = out, out
	if err := session.Run(command); err != nil {
		var exit *ssh.ExitError
		if errors.As(err, &exit) && ctx.Err() == nil {
			return "", fmt.Errorf("%q: %w", command, err)
		}
		return "", sshTimeout(ctx, err, timeout)
	}
	return out.String(), nil
}

// sshTimeout words err as a timeout when ctx has ended, whatever the library made of it (a
// closed connection, an I/O timeout).
func sshTimeout(ctx context.Context, err error, timeout time.Duration) error {
	if deadlinePassed(ctx) {
		return errors.New(timeoutAfterReason(timeout))
	}
	return err
}
