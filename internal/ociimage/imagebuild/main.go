// Command imagebuild writes the Meridian container image as an OCI image layout archive,
// without Docker (`make image`): the contents of the Dockerfile's final stage
// (ociimage.Meridian) around a static meridian binary built beforehand. Load the archive with
// `ctr images import`, `podman load -i` or `skopeo copy oci-archive:FILE ...`.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/meridian-gslb/meridian/internal/atomicfile"
	"github.com/meridian-gslb/meridian/internal/ociimage"
)

func main() {
	binary := flag.String("binary", "", "the static meridian binary (CGO_ENABLED=0) to put at /meridian")
	ca := flag.String("ca", ociimage.CABundle, "the CA bundle to put at "+ociimage.CABundle)
	ref := flag.String("ref", "ghcr.io/meridian-gslb/meridian:dev", "the image reference, NAME:TAG")
	version := flag.String("version", "dev", "the version the image is labelled with")
	arch := flag.String("arch", runtime.GOARCH, "the architecture of the binary (a GOARCH)")
	out := flag.String("o", "meridian-image.tar", "the archive to write")
	flag.Parse()
	if err := build(*binary, *ca, *ref, *version, *arch, *out); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

// build writes the archive out, replacing it atomically.
func build(binary, ca, ref, version, arch, out string) error {
	if binary == "" {
		return fmt.Errorf("-binary is required")
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	bundle, err := os.ReadFile(ca)
	if err != nil {
		return err
	}
	var archive bytes.Buffer
	if err := ociimage.Write(&archive, ociimage.Meridian(ref, version, bin, bundle), arch); err != nil {
		return err
	}
	return atomicfile.Write(out, archive.Bytes())
}
