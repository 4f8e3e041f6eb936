# The meridian image: the binary `make build` produces, on a distroless base, run as user 65532.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t meridian .
#   docker run -p 1053:53/udp -p 1053:53/tcp -v $PWD/conf:/etc/meridian:ro meridian
#
# where conf holds a Corefile serving on port 53 and the zone files it names, relative to
# /etc/meridian (the working directory).
#
# The Helm chart in deploy/helm/meridian runs it in Kubernetes.

# Build: the Makefile's build command, word for word (a test compares them). The Go version is
# go.mod's. CGO_ENABLED=0 makes the binary static, for the distroless static base.
FROM golang:1.26 AS build
ARG VERSION=dev
ENV CGO_ENABLED=0
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go build -trimpath -ldflags "-X main.Version=${VERSION}" -o bin/meridian ./cmd/meridian
# The file capability lets a non-root process bind port 53 where the runtime does not already
# allow it (Kubernetes: keep NET_BIND_SERVICE in the container's capabilities, see the chart).
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends libcap2-bin \
    && setcap cap_net_bind_service=+ep bin/meridian
# The directory of the admin API's overrides file (api_overrides_file's default), writable.
RUN mkdir -p /out/var/lib/meridian

# Run: no shell, no package manager; CA certificates for HTTPS probes and the API's TLS.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/bin/meridian /meridian
COPY --from=build --chown=65532:65532 /out/var/lib/meridian /var/lib/meridian
WORKDIR /etc/meridian
USER 65532:65532
EXPOSE 53/udp 53/tcp
ENTRYPOINT ["/meridian", "-conf", "/etc/meridian/Corefile"]
