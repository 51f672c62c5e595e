# syntax=docker/dockerfile:1
# toolrouter's image for those who build with Docker: the static binaries of scripts/release
# copied onto a static base (Debian's CA certificates, user nonroot 65532, no shell). scripts/image
# builds the same image without a container engine, reproducibly; the test in deploy/image checks
# that this file sets what that image sets. docs/deploy.md#container-image.
#
#   scripts/release linux/amd64 linux/arm64
#   docker buildx build --platform linux/amd64,linux/arm64 -t toolrouter \
#     --build-arg VERSION="$(go version -m dist/toolrouter-linux-amd64 | awk '$1=="mod"{print $3}')" .
ARG BASE=gcr.io/distroless/static-debian12:nonroot
FROM ${BASE}
ARG TARGETARCH
ARG VERSION=""
ARG REVISION=""
ARG CREATED=""
COPY --chmod=0555 dist/toolrouter-linux-${TARGETARCH} /usr/local/bin/toolrouter
COPY --chmod=0555 dist/toolrouter-healthcheck-linux-${TARGETARCH} /usr/local/bin/toolrouter-healthcheck
USER 65532:65532
# Created as USER, so nonroot may write the SQLite usage records there (BuildKit).
WORKDIR /data
VOLUME /data
ENV PATH=/usr/local/bin \
    TOOLROUTER_LISTEN=:8090 \
    TOOLROUTER_USAGE__PATH=/data/toolrouter-usage.db
EXPOSE 8090/tcp
LABEL org.opencontainers.image.title="toolrouter" \
      org.opencontainers.image.description="Gives a council of language models the use of MCP tools: an HTTP sidecar next to Ollama" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["/usr/local/bin/toolrouter-healthcheck"]
ENTRYPOINT ["/usr/local/bin/toolrouter"]
CMD ["serve"]
