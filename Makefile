# Meridian build and test entry points. `make test` is what CI runs (.ci/run), on a fresh
# Debian machine: it installs what is missing, then runs every check and test.

GO           ?= go
STATICCHECK  := honnef.co/go/tools/cmd/staticcheck@v0.8.2
NFPM         := github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
BIN          := bin/meridian
VERSION      ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS      := -X main.Version=$(VERSION)
# Tests that need the built binary find it here; it is built once per run.
export MERIDIAN_BIN := $(CURDIR)/$(BIN)

.PHONY: build run test space deps testbins lint unit fuzz bench clean deb deb-only release image deps-k8s kubebins test-k8s

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/meridian

# The Debian package, dist/meridian_VERSION_ARCH.deb (packaging/; docs/operations.md, "Installing
# the Debian package"): bin/meridian, its systemd unit, the default /etc/meridian and the man page
# meridian(8), which `meridian help -man` writes from docs/configuration.md's option tables.
# deb-only packages $(BIN) as it is, without building it: the packaging test
# (packaging/packaging_test.go) runs it with the binary the tests share.
DIST         := dist
DEB_VERSION   = $(shell packaging/debversion.sh '$(VERSION)')
DEB_ARCH      = $(shell $(GO) env GOARCH)
define package-deb
@mkdir -p $(DIST)
$(BIN) help -man | gzip -9n > $(DIST)/meridian.8.gz
MERIDIAN_DEB_VERSION='$(DEB_VERSION)' MERIDIAN_DEB_ARCH='$(DEB_ARCH)' MERIDIAN_BINARY='$(BIN)' \
	MERIDIAN_MANPAGE='$(DIST)/meridian.8.gz' $(GO) run $(NFPM) package --config packaging/nfpm.yaml \
	--packager deb --target '$(DIST)/meridian_$(DEB_VERSION)_$(DEB_ARCH).deb'
endef
deb: build
	$(package-deb)
deb-only:
	$(package-deb)

# Static binaries (no C library) for linux/amd64 and linux/arm64, dist/meridian-linux-ARCH, with
# their dist/SHA256SUMS. Cross-compiling takes minutes: make test does not build them.
RELEASE_ARCHES := amd64 arm64
release:
	@mkdir -p $(DIST)
	@set -e; for arch in $(RELEASE_ARCHES); do \
		echo "release: linux/$$arch"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS) -s -w" \
			-o $(DIST)/meridian-linux-$$arch ./cmd/meridian; \
	done
	cd $(DIST) && sha256sum $(addprefix meridian-linux-,$(RELEASE_ARCHES)) > SHA256SUMS

# The container image without Docker: an OCI image layout archive, $(IMAGE), of the Dockerfile's
# final stage (internal/ociimage): a static meridian (the Dockerfile's build command), its
# port-53 file capability, the CA bundle, user 65532, /var/lib/meridian, /etc/meridian and the
# entrypoint. Load it with `ctr images import`, `podman load -i` or `skopeo copy oci-archive:`.
IMAGE        ?= $(DIST)/meridian-image.tar
IMAGE_REF    ?= ghcr.io/meridian-gslb/meridian:$(VERSION)
image:
	@mkdir -p $(DIST)/image
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(DIST)/image/meridian ./cmd/meridian
	$(GO) run ./internal/ociimage/imagebuild -binary $(DIST)/image/meridian -ref '$(IMAGE_REF)' \
		-version '$(VERSION)' -o $(IMAGE)

# Serve the quick start on 127.0.0.1:1053.
run: build
	$(BIN) -conf examples/quickstart/Corefile

# Debian packages the tests and benchmarks use; installed only when missing.
deps:
	@missing=""; \
	command -v dig >/dev/null || missing="$$missing dnsutils"; \
	command -v kdig >/dev/null || missing="$$missing knot-dnsutils"; \
	command -v mariadbd >/dev/null || command -v mysqld >/dev/null || missing="$$missing mariadb-server"; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	command -v unbound >/dev/null || missing="$$missing unbound"; \
	command -v sshd >/dev/null || [ -x /usr/sbin/sshd ] || missing="$$missing openssh-server"; \
	command -v named >/dev/null || [ -x /usr/sbin/named ] || missing="$$missing bind9"; \
	command -v knotd >/dev/null || [ -x /usr/sbin/knotd ] || missing="$$missing knot"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v dnstap-read >/dev/null || missing="$$missing bind9-dnsutils"; \
	command -v prometheus >/dev/null || missing="$$missing prometheus"; \
	command -v zonemaster-cli >/dev/null || missing="$$missing zonemaster-cli"; \
	command -v dnsviz >/dev/null && /usr/bin/python3 -c "import pygraphviz" 2>/dev/null || missing="$$missing dnsviz python3-pygraphviz"; \
	command -v prometheus >/dev/null || missing="$$missing prometheus"; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# Servers and tools the tests run that Debian does not package, built once per machine and cached
# outside the repository: consul, etcd and kube-apiserver (built from their Go modules; about ten,
# two and twenty minutes the first time; Debian's etcd is older than Kubernetes supports), and
# helm (the chart's tests render and lint it with a pinned release; two to five minutes).
testbins:
	$(GO) run ./internal/testutil/consulbuild
	$(GO) run ./internal/testutil/kubebuild
	$(GO) run ./internal/testutil/helmbuild
	$(GO) run ./internal/testutil/externaldnsbuild
	$(GO) run ./internal/testutil/dnstapbuild

# What the real-cluster tests need from Debian, installed only when missing (as root; without
# root, or when apt cannot install them, the tests skip and say why).
deps-k8s:
	@missing=""; \
	command -v containerd >/dev/null || missing="$$missing containerd"; \
	command -v runc >/dev/null || missing="$$missing runc"; \
	[ -x /usr/lib/cni/bridge ] || missing="$$missing containernetworking-plugins"; \
	command -v iptables >/dev/null || missing="$$missing iptables"; \
	command -v conntrack >/dev/null || missing="$$missing conntrack"; \
	command -v ip >/dev/null || missing="$$missing iproute2"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "deps-k8s: not root, cannot install$$missing"; \
		else \
			echo "installing:$$missing"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing \
				|| echo "deps-k8s: could not install$$missing"; \
		fi; \
	fi

# Every program of the one-node cluster, built from k8s.io/kubernetes in one module with one
# build cache, kept under the user's cache directory (meridian-test/kubernetes-VERSION, about
# 5 GB): after `make testbins` (etcd, kube-apiserver) about seven more minutes on two cores.
kubebins:
	nice -n 10 $(GO) run ./internal/testutil/kubebuild -cluster

# The real-cluster tests (docs/kubernetes.md, "Tested in a real cluster"): the image of `make
# image` and the chart in a one-node cluster on this machine's containerd. They need root and
# the whole host's network and cgroups for their run, so `make test` leaves them out; CI (.ci/run)
# runs both. One package at a time: each runs its clusters, one per machine.
test-k8s: space deps-k8s image kubebins
	MERIDIAN_TEST_K8S=1 MERIDIAN_IMAGE=$(CURDIR)/$(IMAGE) $(GO) test -race -count=1 -p 1 -timeout 30m -v \
		-run '^(TestCluster|TestChartInCluster)' ./internal/testutil ./deploy/realcluster

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# The end-to-end tests of answers run twice: as everything else, and with the fast path on in
# every gslb block they start (testutil.WithFastPath).
FASTPATH_E2E = SignedAnswers|DNSSECPlugin|CorefileReloadLeaksNothing|Reference|Authoritative|ECSOverSockets|LiveReload|ZoneTransfersAreRefused|GeoAnswersFollow|FailoverFollows|ChainEndToEnd|TTLFollows|PassedOn|CompleteZone|MalformedQueries|Quickstart|SlowStart|FastPath
unit:
	$(GO) test -race -count=1 -timeout 20m ./...
	MERIDIAN_TEST_FASTPATH=1 $(GO) test -count=1 -timeout 10m -run '$(FASTPATH_E2E)' ./cmd/meridian

# The free space where the run writes (the build cache under $$HOME, test files under $$TMPDIR):
# a fresh machine's run took about 17 GB at its peak, most of it the module and build caches,
# and a full disk shows as failures far from their cause.
space:
	@df -h . "$${HOME:-/root}" "$${TMPDIR:-/tmp}" | awk 'NR == 1 || !seen[$$1]++'

test: space deps build lint testbins unit

# Short fuzzing runs of every fuzz target in the tree, found by `go test -list` in each package
# with tests (longer runs: make fuzz FUZZTIME=10m).
# Minimizing is bounded by executions rather than Go's default of 60 s an input: the fuzzer
# counts no executions while it minimizes a new input, and a -fuzztime deadline that falls in a
# minimization is reported as "fuzzing process hung or terminated unexpectedly while
# minimizing" without a failing input (golang/go#48820, #52569).
FUZZTIME ?= 30s
FUZZFLAGS = -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1000x
fuzz:
	@set -e; n=0; \
	for pkg in $$($(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...); do \
		list=$$($(GO) test -list '^Fuzz' $$pkg); \
		for target in $$(echo "$$list" | grep '^Fuzz' || true); do \
			echo "fuzz: $$target in $$pkg"; \
			$(GO) test $(FUZZFLAGS) -fuzz "^$$target\$$" $$pkg; \
			n=$$((n + 1)); \
		done; \
	done; \
	echo "fuzz: $$n targets"

bench: build
	bench/run.sh

clean:
	rm -rf bin $(DIST)
