// Package packaging holds Meridian's Debian package: nfpm.yaml (built by `make deb`), the systemd
// unit meridian.service and the default configuration etc/meridian. It has no code: its test
// builds the package, installs it into a scratch root and runs what it installed.
package packaging
