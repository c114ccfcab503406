# syntax=docker/dockerfile:1
# BPC job service image: one static binary, `bpc serve` by default.
#   docker build -t bpc:dev .            (or: make docker-build)
#   docker run --rm -e DATABASE_URL=... -e BPC_ADMIN_TOKEN=... -p 8080:8080 bpc:dev
#   docker run --rm -e DATABASE_URL=... bpc:dev migrate
# Migrations are embedded in the binary (migrations/*.sql via go:embed).

FROM golang:1.26-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/bpc ./cmd/bpc
# Writable export directory for the nonroot user (uid 65532) of the runtime image.
RUN mkdir -p /out/exports

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/bpc /bpc
COPY --from=build --chown=65532:65532 /out/exports /var/lib/bpc/exports
ENV BPC_HTTP_ADDR=:8080 \
    BPC_EXPORT_DIR=/var/lib/bpc/exports
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/bpc"]
CMD ["serve"]
