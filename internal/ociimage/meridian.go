package ociimage

import "io/fs"

// MeridianUID is the user and group the Meridian image runs as: distroless's nonroot, 65532.
const MeridianUID = 65532

// CABundle is where the Meridian image holds the CA certificates (where Debian and distroless
// hold them; Go's crypto/x509 reads this path).
const CABundle = "/etc/ssl/certs/ca-certificates.crt"

// Meridian returns the image the repository's Dockerfile builds, its final stage on the
// distroless static-debian12:nonroot base, with binary (a static meridian, CGO_ENABLED=0) at
// /meridian with the file capability cap_net_bind_service=+ep, caBundle at CABundle, the parts
// of the base a static binary uses (the passwd and group entries of root, nobody and nonroot,
// nsswitch.conf, /tmp with the sticky bit, nonroot's home), /var/lib/meridian owned by
// MeridianUID, the working directory /etc/meridian, user MeridianUID:MeridianUID, ports 53/udp
// and 53/tcp, and the entrypoint `/meridian -conf /etc/meridian/Corefile`. ref is NAME:TAG; version
// labels the image (org.opencontainers.image.version).
func Meridian(ref, version string, binary, caBundle []byte) Image {
	const passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	const group = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"
	return Image{
		Ref: ref,
		Config: Config{
			User:         "65532:65532",
			Entrypoint:   []string{"/meridian", "-conf", "/etc/meridian/Corefile"},
			Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=" + CABundle},
			WorkingDir:   "/etc/meridian",
			ExposedPorts: []string{"53/tcp", "53/udp"},
			Labels: map[string]string{
				"org.opencontainers.image.source":  "https://github.com/meridian-gslb/meridian",
				"org.opencontainers.image.version": version,
			},
		},
		Files: []File{
			{Path: "/meridian", Mode: 0o755, Data: binary, Xattrs: map[string]string{"security.capability": NetBindService()}},
			{Path: CABundle, Mode: 0o644, Data: caBundle},
			{Path: "/etc/passwd", Mode: 0o644, Data: []byte(passwd)},
			{Path: "/etc/group", Mode: 0o644, Data: []byte(group)},
			{Path: "/etc/nsswitch.conf", Mode: 0o644, Data: []byte("hosts: files dns\n")},
			Dir("/tmp", fs.ModeSticky|0o777, 0, 0),
			Dir("/home/nonroot", 0o700, MeridianUID, MeridianUID),
			Dir("/var/lib/meridian", 0o755, MeridianUID, MeridianUID),
			Dir("/etc/meridian", 0o755, 0, 0),
		},
	}
}
