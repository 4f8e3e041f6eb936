package testutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	tap "github.com/dnstap/golang-dnstap"
)

// DnstapVersion is the release of github.com/dnstap/golang-dnstap whose dnstap command (the
// Go dnstap tool) the answer log's tests run as its reader.
const DnstapVersion = "v0.4.0"

// DnstapBinary returns the Go dnstap tool: $MERIDIAN_DNSTAP when set, else the one cached by
// `make testbins` (built on first use: a few seconds).
func DnstapBinary() (string, error) {
	if bin := os.Getenv("MERIDIAN_DNSTAP"); bin != "" {
		return bin, nil
	}
	return cachedBinary("dnstap", DnstapVersion, func(dir, bin string) error {
		gomod := "module meridian.test/dnstap\n\ngo 1.26\n\nrequire github.com/dnstap/golang-dnstap " + DnstapVersion + "\n"
		return buildGoMain(dir, bin, "github.com/dnstap/golang-dnstap/dnstap", gomod, nil)
	})
}

// DnstapCollector is the Go dnstap tool listening on a Unix socket, writing the frames it
// reads to a file, as an operator's pipeline collects an answer log.
type DnstapCollector struct {
	// Socket is where the dnstap plugins connect to.
	Socket string
	file   string
	proc   *process
	turns  int
}

// StartDnstapCollector starts the Go dnstap tool on a socket in dir; it stops with the test.
func StartDnstapCollector(t testing.TB, dir string) *DnstapCollector {
	t.Helper()
	bin, err := DnstapBinary()
	if err != nil {
		t.Fatal(err)
	}
	c := &DnstapCollector{Socket: filepath.Join(dir, "dnstap.sock"), file: filepath.Join(dir, "answers.dnstap")}
	c.proc = startProcess(t, exec.Command(bin, "-u", c.Socket, "-w", c.file))
	c.proc.waitFor(t, "dnstap", 10*time.Second, func() bool {
		_, err := os.Stat(c.Socket)
		return err == nil
	})
	return c
}

// Rotate moves the tool's file aside and has it close it and open a new one (SIGHUP, as
// logrotate does), and returns the path of the closed file, complete.
func (c *DnstapCollector) Rotate(t testing.TB) string {
	t.Helper()
	c.turns++
	done := fmt.Sprintf("%s.%d", c.file, c.turns)
	if err := os.Rename(c.file, done); err != nil {
		t.Fatal(err)
	}
	if err := c.proc.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// The tool closes the old file before it creates the new one.
	c.proc.waitFor(t, "dnstap", 10*time.Second, func() bool {
		_, err := os.Stat(c.file)
		return err == nil
	})
	return done
}

// ReadDnstapFile returns the frames of a dnstap file.
func ReadDnstapFile(t testing.TB, path string) []*tap.Dnstap {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := tap.NewReader(f, nil)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	dec := tap.NewDecoder(r, 96*1024)
	var frames []*tap.Dnstap
	for {
		frame := new(tap.Dnstap)
		if err := dec.Decode(frame); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("%s: %v", path, err)
			}
			return frames
		}
		frames = append(frames, frame)
	}
}
