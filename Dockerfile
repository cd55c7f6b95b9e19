# syntax=docker/dockerfile:1
#
# One image per Quarters service, from the repository root (services build
# against ../../pkg and ../../proto-events):
#
#   docker build --build-arg SERVICE=auth -t quarters/auth .
#
# The final image holds nothing but the static binary and the CA bundle, runs
# as a numeric non-root user and has no shell. Where no base image can be
# pulled, build the binary outside and package it FROM scratch alone
# (`make images` does this):
#
#   CGO_ENABLED=0 GOWORK=off go build -C services/auth -o ../../bin/image/auth .
#   cp /etc/ssl/certs/ca-certificates.crt bin/image/
#   buildah bud --target prebuilt --build-arg SERVICE=auth -t quarters/auth .

ARG GO_VERSION=1.26.7

FROM golang:${GO_VERSION}-bookworm AS build
ARG SERVICE
RUN test -n "${SERVICE}" || { echo "set --build-arg SERVICE=<service>" >&2; exit 1; }
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY pkg/go.mod pkg/go.sum pkg/
COPY proto-events/go.mod proto-events/go.sum proto-events/
COPY services/${SERVICE}/go.mod services/${SERVICE}/go.sum services/${SERVICE}/
ENV CGO_ENABLED=0 GOWORK=off GOFLAGS=-trimpath
RUN --mount=type=cache,target=/go/pkg/mod \
    cd services/${SERVICE} && go mod download
COPY pkg/ pkg/
COPY proto-events/ proto-events/
COPY services/${SERVICE}/ services/${SERVICE}/
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    cd services/${SERVICE} && go build -ldflags="-s -w" -o /out/quarters . \
    && cp /etc/ssl/certs/ca-certificates.crt /out/ca-certificates.crt

# The final image from a binary built outside: bin/image/<service> and
# bin/image/ca-certificates.crt in the build context.
FROM scratch AS prebuilt
ARG SERVICE
COPY bin/image/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY bin/image/${SERVICE} /quarters
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/quarters"]

# The default target: the binary built above.
FROM scratch AS image
COPY --from=build /out/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/quarters /quarters
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/quarters"]
