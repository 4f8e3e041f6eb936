package probe

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// mysqlConnMaxIdle is how long an idle connection is kept for the next probe. Probes usually
// run every few seconds, so the connection is reused; a check that stopped running lets it go.
const mysqlConnMaxIdle = 3 * time.Minute

// mysqlProbe connects to a MySQL or MariaDB server and runs one query. It keeps one *sql.DB,
// holding at most one connection that later probes reuse; database/sql makes it safe for
// concurrent use.
//
// Parameters:
//
//	host             server address, default the backend's host.
//	port             default the backend's port, else 3306.
//	user, password   credentials; database: the default database (none when empty).
//	query            default "SELECT 1".
//	expected_result  optional regular expression the first column of the first row must
//	                 match (NULL reads as the empty string).
//
// A probe fails when the server cannot be reached, rejects the credentials, the query fails or
// returns no row, or the result does not match expected_result.
//
// The pool outlives probes: the scheduler must call Close (the prober is an io.Closer) when it
// drops the check, for example on a configuration reload, or the idle connection lingers until
// mysqlConnMaxIdle passes.
type mysqlProbe struct {
	db       *sql.DB
	addr     string // host:port, for logs and tests
	query    string
	expected *regexp.Regexp
	timeout  time.Duration
}

// newMySQLProbe compiles a mysql check. It does not connect: the first probe does.
func newMySQLProbe(p *params, t Target, timeout time.Duration) (Prober, error) {
	host := p.String("host", t.Host)
	port := p.Port(t, 3306)
	cfg := mysql.NewConfig()
	cfg.User = p.String("user", "")
	cfg.Passwd = p.String("password", "")
	cfg.DBName = p.String("database", "")
	query := strings.TrimSpace(p.String("query", "SELECT 1"))
	expected := p.Regexp("expected_result")
	if host == "" {
		return nil, errors.New("params.host: required (the backend has no address)")
	}
	if query == "" {
		return nil, errors.New("params.query: must not be empty")
	}
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort(host, fmt.Sprint(port))
	// The context bounds each probe. These are a safety net for a connection stuck without
	// one, longer than the timeout so the context always ends a probe first.
	cfg.Timeout = timeout
	cfg.ReadTimeout = 2 * timeout
	cfg.WriteTimeout = 2 * timeout
	// The probe's reason carries the error; the driver's own log lines would only repeat it.
	cfg.Logger = &mysql.NopLogger{}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("params: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(mysqlConnMaxIdle)
	return &mysqlProbe{db: db, addr: cfg.Addr, query: query, expected: expected, timeout: timeout}, nil
}

// Probe runs the query on the pooled connection (connecting first when there is none).
func (m *mysqlProbe) Probe(ctx context.Context) Result {
	value, err := m.firstValue(ctx)
	if err != nil {
		if deadlinePassed(ctx) {
			return Fail("%s", timeoutAfterReason(m.timeout))
		}
		return Fail("mysql: %s", mysqlReason(err))
	}
	if m.expected != nil && !m.expected.MatchString(value) {
		return Fail("mysql: result %q does not match %q", clipReason(value), m.expected.String())
	}
	return Pass(fmt.Sprintf("mysql: result %q", clipReason(value)))
}

// firstValue runs the query and returns the first column of its first row as text.
func (m *mysqlProbe) firstValue(ctx context.Context) (string, error) {
	rows, err := m.db.QueryContext(ctx, m.query)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return "", err
		}
		return "", errors.New("query returned no rows")
	}
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	if len(cols) == 0 {
		return "", errors.New("query returned no columns")
	}
	// Scan every column (Scan wants them all), keep the first.
	dest := make([]any, len(cols))
	var first sql.NullString
	dest[0] = &first
	for i := 1; i < len(dest); i++ {
		dest[i] = new(sql.RawBytes)
	}
	if err := rows.Scan(dest...); err != nil {
		return "", err
	}
	return first.String, rows.Close()
}

// Close releases the connection pool. The scheduler calls it when the check is dropped.
func (m *mysqlProbe) Close() error { return m.db.Close() }

// mysqlReason shortens a driver error for a log line: server errors lose their SQLSTATE, and
// network errors keep only the failing step and its cause ("connect: connection refused").
func mysqlReason(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return clipReason(fmt.Sprintf("Error %d: %s", me.Number, me.Message))
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		op := oe.Op
		if op == "dial" {
			op = "connect"
		}
		cause := oe.Err
		var se *os.SyscallError
		if errors.As(cause, &se) {
			cause = se.Err
		}
		return clipReason(op + ": " + cause.Error())
	}
	if errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, sql.ErrConnDone) {
		return "connection lost"
	}
	return clipReason(err.Error())
}
