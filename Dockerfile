# cni-chainer: the node agent image, a drop-in for linkerd's cni-plugin image.
#
#   docker build --build-arg PLUGIN_IMAGE=cr.l5d.io/linkerd/cni-plugin:v1.7.0 -t cni-chainer .
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg PLUGIN_IMAGE=cr.l5d.io/linkerd/cni-plugin:v1.7.0 -t <registry>/cni-chainer:<tag> --push .
#
# PLUGIN_IMAGE supplies the chained plugin's binary (/opt/cni/bin/linkerd-cni) and linkerd's CNI repair
# controller (/usr/lib/linkerd/linkerd-cni-repair-controller, which linkerd2-cni's chart runs from the
# same image when repairController.enabled=true). For a multi-arch build it must be multi-arch too;
# each stage then builds for its own platform (the addon compiles natively under emulation).
ARG PLUGIN_IMAGE
FROM ${PLUGIN_IMAGE} AS plugin

FROM node:24-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json binding.gyp tsconfig.json ./
COPY native ./native
COPY scripts ./scripts
COPY src ./src
# npm ci builds the addon (node-gyp), the TypeScript and the one-file bundle (prepare); then only the
# runtime dependency that is not bundled is kept: @parcel/watcher, a native module. The registry's
# Node (node-linux-<arch>, an optional dependency that runs the build and tests on the image's major
# on any machine) goes too: the image has its own.
RUN npm ci && npm prune --omit=dev && rm -rf node_modules/node-linux-* node_modules/.bin/node

# Debian slim rather than distroless: linkerd2-cni's chart runs `/bin/sh -c "kill -15 1; sleep 15s"` as
# the container's preStop hook, which needs a shell, kill and sleep in the image.
FROM node:24-bookworm-slim
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="cni-chainer" \
      org.opencontainers.image.description="Keeps linkerd-cni chained into every CNI config of a Kubernetes node" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
WORKDIR /app
ENV NODE_ENV=production
# libuv's pool runs the patches' fsyncs; a larger one lets a storm's fsyncs share journal commits.
# It must be set before Node starts (Node creates the pool while loading the entry module).
ENV UV_THREADPOOL_SIZE=16
# One malloc arena per pool thread would cost peak RSS for nothing (the fsyncs allocate little).
ENV MALLOC_ARENA_MAX=2
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/build/Release/cni_chainer.node ./build/Release/cni_chainer.node
COPY --from=build /src/dist/cni-chainer.mjs ./dist/cni-chainer.mjs
# The Prometheus exposition, loaded at the first scrape of /metrics (scripts/bundle.mjs says why).
COPY --from=build /src/dist/cni-chainer-prometheus.mjs ./dist/cni-chainer-prometheus.mjs
# V8's bytecode of the agent's start, made by the build (scripts/compile-cache.mjs): each start reads
# it instead of compiling the bundle. Portable, so the build stage's /src makes it valid at /app; used
# only by the same Node build, and read-only here (a miss costs only the benefit).
COPY --from=build /src/dist/compile-cache ./dist/compile-cache
ENV NODE_COMPILE_CACHE=/app/dist/compile-cache NODE_COMPILE_CACHE_PORTABLE=1
COPY --from=plugin /opt/cni/bin/linkerd-cni /opt/cni/bin/linkerd-cni
COPY --from=plugin /usr/lib/linkerd/linkerd-cni-repair-controller /usr/lib/linkerd/linkerd-cni-repair-controller
# Runs as root: it writes root-owned files in the node's /etc/cni/net.d and /opt/cni/bin through
# hostPath mounts. It needs no privileged mode; deploy/base drops every capability but the file ones
# (CHOWN, DAC_OVERRIDE, FOWNER).
USER 0
# The default HEALTH_PORT; deploy/base sets 9736 (it runs on the host network).
EXPOSE 9190
CMD ["node", "dist/cni-chainer.mjs", "run"]
