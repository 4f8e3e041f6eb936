package testutil

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MariaDBUser is the account MariaDB creates; it has every privilege, from any host.
const MariaDBUser = "meridian"

// MariaDBDatabase is an empty database MariaDB creates for tests to use.
const MariaDBDatabase = "meridian"

// mariadbStartTimeout bounds one server start, from launching mariadbd until it accepts
// connections.
const mariadbStartTimeout = 30 * time.Second

// MariaDB starts a private MariaDB (or MySQL) server for the test, on a free 127.0.0.1 port
// with a data directory under t.TempDir(), and returns its TCP address with the user
// (MariaDBUser) and the random password of an account holding every privilege. The server is
// stopped when the test ends.
//
// It needs the binaries of Debian's mariadb-server package (mariadbd and mariadb-install-db);
// when they are missing the test is skipped. A start takes about 3.5 s (most of it
// mariadb-install-db), so a test should start one server and share it between its subtests.
func MariaDB(t testing.TB) (addr string, user, password string) {
	t.Helper()
	server := mariadbBinary("mariadbd", "mysqld")
	installDB := mariadbBinary("mariadb-install-db", "mysql_install_db")
	if server == "" || installDB == "" {
		t.Skip("MariaDB is not installed (mariadbd and mariadb-install-db, Debian package mariadb-server)")
	}
	dir := t.TempDir()
	datadir := filepath.Join(dir, "data")
	// A Unix socket path is limited to 108 bytes, and t.TempDir() paths grow with the test's
	// name: keep the socket in a short directory of its own.
	sockDir, err := os.MkdirTemp("", "mdb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	socket := filepath.Join(sockDir, "sock")

	args := []string{"--no-defaults", "--datadir=" + datadir, "--auth-root-authentication-method=normal", "--skip-test-db"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	if out, err := exec.Command(installDB, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", installDB, err, out)
	}

	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := FreePort(t)
		stop, err := startMariaDB(server, dir, datadir, socket, port)
		if err != nil {
			lastErr = err
			continue
		}
		t.Cleanup(stop)
		password = mariadbPassword(t)
		if err := createMariaDBUser(socket, password); err != nil {
			t.Fatalf("MariaDB: creating the test user: %v", err)
		}
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), MariaDBUser, password
	}
	t.Fatalf("MariaDB did not start: %v", lastErr)
	return "", "", ""
}

// mariadbBinary returns the path of the first of names found in PATH or in the sbin
// directories (which a normal user's PATH may lack), or "".
func mariadbBinary(names ...string) string {
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/bin"} {
			p := filepath.Join(dir, name)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				return p
			}
		}
	}
	return ""
}

// startMariaDB launches the server and waits until it accepts connections on its socket. It
// returns a function stopping it (SIGTERM, then SIGKILL after ten seconds).
func startMariaDB(server, dir, datadir, socket string, port int) (stop func(), err error) {
	logFile := filepath.Join(dir, fmt.Sprintf("error-%d.log", port))
	args := []string{
		"--no-defaults",
		"--datadir=" + datadir,
		"--socket=" + socket,
		"--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--pid-file=" + filepath.Join(dir, "mariadbd.pid"),
		"--log-error=" + logFile,
		"--skip-name-resolve",
		"--innodb-buffer-pool-size=16M",
		"--innodb-use-native-aio=0",
		"--innodb-buffer-pool-dump-at-shutdown=0",
		"--innodb-buffer-pool-load-at-startup=0",
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(server, args...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stop = func() {
		select {
		case <-done:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	deadline := time.Now().Add(mariadbStartTimeout)
	for {
		select {
		case <-done:
			return nil, fmt.Errorf("mariadbd exited: %s", mariadbLogTail(logFile))
		default:
		}
		if err := pingMariaDB(socket); err == nil {
			return stop, nil
		} else if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("mariadbd not ready after %s (%v): %s", mariadbStartTimeout, err, mariadbLogTail(logFile))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mariadbRootDB opens a connection pool to the server's socket as root (no password).
func mariadbRootDB(socket string) (*sql.DB, error) {
	cfg := mysql.NewConfig()
	cfg.Net = "unix"
	cfg.Addr = socket
	cfg.User = "root"
	cfg.Timeout = time.Second
	cfg.Logger = &mysql.NopLogger{}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(connector), nil
}

// pingMariaDB checks once whether the server accepts connections.
func pingMariaDB(socket string) error {
	db, err := mariadbRootDB(socket)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// createMariaDBUser creates MariaDBUser with password and every privilege, and MariaDBDatabase.
func createMariaDBUser(socket, password string) error {
	db, err := mariadbRootDB(socket)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, stmt := range []string{
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", MariaDBUser, password),
		fmt.Sprintf("GRANT ALL PRIVILEGES ON *.* TO '%s'@'%%'", MariaDBUser),
		"CREATE DATABASE " + MariaDBDatabase,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", strings.SplitN(stmt, " IDENTIFIED", 2)[0], err)
		}
	}
	return nil
}

// mariadbPassword returns 32 random hexadecimal digits.
func mariadbPassword(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// mariadbLogTail returns the last lines of a log file, for error messages.
func mariadbLogTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "(no error log)"
		}
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
