package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

// TestWriteRead writes an image and reads it back: the same configuration, the files with the
// directories they need added, in path order, with their owners, modes and attributes; and the
// bytes are the same when written again.
func TestWriteRead(t *testing.T) {
	img := Image{Ref: "localhost/app:1", Config: Config{User: "10:20", Entrypoint: []string{"/bin/app", "-v"},
		Cmd: []string{"serve"}, Env: []string{"A=1"}, WorkingDir: "/srv", ExposedPorts: []string{"53/tcp", "53/udp"},
		Labels: map[string]string{"k": "v"}},
		Files: []File{
			{Path: "/bin/app", Mode: 0o755, Data: []byte("binary"), Xattrs: map[string]string{"security.capability": NetBindService()}},
			Dir("/tmp", fs.ModeSticky|0o777, 0, 0),
			Dir("/srv", 0o750, 10, 20),
			{Path: "/srv/data/file", Mode: 0o600, UID: 10, GID: 20, Data: []byte("x")},
		}}
	var first, second bytes.Buffer
	if err := Write(&first, img, "arm64"); err != nil {
		t.Fatal(err)
	}
	if err := Write(&second, img, "arm64"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Error("two writes of the same image differ")
	}
	got, arch, err := Read(bytes.NewReader(first.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if arch != "arm64" || got.Ref != img.Ref || !reflect.DeepEqual(got.Config, img.Config) {
		t.Errorf("read %s %q %+v, want arm64 %q %+v", arch, got.Ref, got.Config, img.Ref, img.Config)
	}
	want := []File{Dir("/bin", 0o755, 0, 0), img.Files[0], img.Files[2], Dir("/srv/data", 0o755, 0, 0), img.Files[3], img.Files[1]}
	if !reflect.DeepEqual(got.Files, want) {
		t.Errorf("files:\n%+v\nwant\n%+v", got.Files, want)
	}
}

// TestArchiveLayout: the archive holds what an OCI image layout must, and names the image for
// containerd.
func TestArchiveLayout(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, Image{Ref: "localhost/pause:1", Files: []File{{Path: "/pause", Mode: 0o755, Data: []byte("p")}}}, "amd64"); err != nil {
		t.Fatal(err)
	}
	blobs, err := readTar(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(blobs["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout: %s", got)
	}
	var idx index
	if err := decodeBlob(blobs, "index.json", &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Manifests) != 1 || idx.Manifests[0].Annotations[annotationName] != "localhost/pause:1" ||
		idx.Manifests[0].Annotations[annotationRef] != "1" || idx.Manifests[0].MediaType != mediaManifest {
		t.Fatalf("index.json: %+v", idx)
	}
	n := 0
	for name, data := range blobs {
		if d, ok := strings.CutPrefix(name, "blobs/sha256/"); ok {
			n++
			if digest(data) != "sha256:"+d {
				t.Errorf("blob %s has the digest %s", name, digest(data))
			}
		}
	}
	if n != 3 {
		t.Errorf("%d blobs, want 3 (manifest, config, layer)", n)
	}
}

// TestWriteRefuses: what cannot be an image's file or reference is an error, not an archive.
func TestWriteRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		img   Image
		error string
	}{
		{"no tag", Image{Ref: "localhost:5000/app"}, "want NAME:TAG"},
		{"relative path", Image{Ref: "a:1", Files: []File{{Path: "etc/x"}}}, "absolute, clean"},
		{"unclean path", Image{Ref: "a:1", Files: []File{{Path: "/etc/../x"}}}, "absolute, clean"},
		{"root", Image{Ref: "a:1", Files: []File{Dir("/", 0o755, 0, 0)}}, "absolute, clean"},
		{"twice", Image{Ref: "a:1", Files: []File{{Path: "/x"}, {Path: "/x"}}}, "listed twice"},
		{"inside a file", Image{Ref: "a:1", Files: []File{{Path: "/x"}, {Path: "/x/y"}}}, "a regular file"},
		{"symlink", Image{Ref: "a:1", Files: []File{{Path: "/x", Mode: fs.ModeSymlink}}}, "only regular files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Write(&buf, tc.img, "amd64")
			if err == nil || !strings.Contains(err.Error(), tc.error) {
				t.Fatalf("error %v, want one saying %q", err, tc.error)
			}
		})
	}
}

// TestNetBindService is the attribute `setcap cap_net_bind_service=+ep` writes: revision 2 with
// the effective flag, bit 10 permitted, nothing inheritable.
func TestNetBindService(t *testing.T) {
	v := []byte(NetBindService())
	if len(v) != 20 {
		t.Fatalf("%d bytes, want 20", len(v))
	}
	words := make([]uint32, 5)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(v[4*i:])
	}
	if want := []uint32{0x02000001, 1 << 10, 0, 0, 0}; !reflect.DeepEqual(words, want) {
		t.Errorf("%#x, want %#x", words, want)
	}
}

// TestReadRefuses: an archive that is not an image layout is an error.
func TestReadRefuses(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := writeEntry(tw, &tar.Header{Name: "index.json", Mode: 0o644}, []byte(`{"manifests": []}`)); err != nil {
		t.Fatal(err)
	}
	tw.Close()
	for name, archive := range map[string][]byte{"not a tar": []byte("garbage that is not a tar archive at all"),
		"no manifest": buf.Bytes(), "empty": nil} {
		if _, _, err := Read(bytes.NewReader(archive)); err == nil {
			t.Errorf("%s: read without an error", name)
		}
	}
}

// TestRelabel: a relabelled archive is another image (its name, its labels added) with the
// same files, whose layer is the same blob, not compressed again.
func TestRelabel(t *testing.T) {
	img := Image{Ref: "localhost/meridian:1", Config: Config{User: "1:1", Labels: map[string]string{"a": "1", "v": "1"}},
		Files: []File{{Path: "/bin/x", Mode: 0o755, Data: []byte("x")}}}
	var buf bytes.Buffer
	if err := Write(&buf, img, "amd64"); err != nil {
		t.Fatal(err)
	}
	out, err := Relabel(buf.Bytes(), "localhost/meridian:2", map[string]string{"v": "2"})
	if err != nil {
		t.Fatal(err)
	}
	got, arch, err := Read(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := img
	want.Ref, want.Config.Labels = "localhost/meridian:2", map[string]string{"a": "1", "v": "2"}
	want.Files = []File{Dir("/bin", 0o755, 0, 0), img.Files[0]}
	if arch != "amd64" || !reflect.DeepEqual(got, want) {
		t.Errorf("relabelled: %s %+v, want amd64 %+v", arch, got, want)
	}
	before, _ := readTar(bytes.NewReader(buf.Bytes()))
	after, _ := readTar(bytes.NewReader(out))
	_, m, _, err := readLayout(before)
	if err != nil {
		t.Fatal(err)
	}
	if layer := blobPath(m.Layers[0].Digest); !bytes.Equal(before[layer], after[layer]) {
		t.Errorf("the layer %s is not in the relabelled archive as it was", layer)
	}
	if _, err := Relabel(buf.Bytes(), "no-tag", nil); err == nil {
		t.Error("relabelled to a reference without a tag")
	}
}
