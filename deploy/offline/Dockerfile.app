# Image of a Go service (classifier, publisher, index-manager) or of the dashboard for the
# offline override: the runtime stage of deploy/Dockerfile.service (and dashboard/Dockerfile),
# with the binaries (and the dashboard's dist/) that build-images.sh built on this machine,
# with the flags of those Dockerfiles, instead of compiling them in a golang (and node) image.
# The build arguments of docker-compose.yml that choose a service (SERVICE, BINARIES, PORT)
# reach this file too and are unused: compose.offline.yml names each binary. The build context is
# deploy/offline/apps/<image>/ (what goes to /app); compose.offline.yml selects it.
ARG RUNTIME_IMAGE=north-cloud-offline/runtime:busybox
FROM ${RUNTIME_IMAGE}
RUN addgroup -g 10001 app \
 && adduser -D -H -u 10001 -G app -s /sbin/nologin app
WORKDIR /app
# Root-owned, read/execute only for the service user, as in the service images.
COPY . /app/
ENV PATH=/app:$PATH
USER 10001:10001
# No CMD: each service of compose.offline.yml names its binary (command:).
