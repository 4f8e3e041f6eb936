package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteReplaces replaces a file, creating its directory, and leaves no temporary file.
func TestWriteReplaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "state.json")
	for _, content := range []string{"first", "second"} {
		if err := Write(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("file holds %q (%v), want %q", got, err, content)
		}
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil || len(entries) != 1 {
		t.Errorf("directory holds %v (%v), want the file alone", entries, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v (%v), want 0644", fi.Mode(), err)
	}
}

// TestWriteFailsOnADirectory keeps what is at path when it cannot be replaced, and names it.
func TestWriteFailsOnADirectory(t *testing.T) {
	path := t.TempDir()
	if err := Write(path, []byte("x")); err == nil {
		t.Fatal("replacing a directory succeeded")
	}
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		t.Errorf("the directory is gone: %v", err)
	}
}
