# cni-chainer: the node agent image.
#
#   docker build --build-arg PLUGIN_IMAGE=<linkerd cni-plugin image:tag> -t cni-chainer .
#
# PLUGIN_IMAGE supplies the chained plugin's binary (/opt/cni/bin/linkerd-cni in linkerd's image);
# the agent copies every regular file of /opt/cni/bin (CONTAINER_CNI_BIN_DIR) onto the node.
ARG PLUGIN_IMAGE
FROM ${PLUGIN_IMAGE} AS plugin

FROM node:24-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json binding.gyp tsconfig.json ./
COPY native ./native
COPY src ./src
# npm ci builds the addon (node-gyp) and the TypeScript (prepare); then drop the build tools.
RUN npm ci && npm prune --omit=dev

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
# libuv's pool runs the patches' fsyncs; a larger one lets a storm's fsyncs share journal commits.
# It must be set before Node starts (Node creates the pool while loading the entry module).
ENV UV_THREADPOOL_SIZE=16
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/build/Release/inotify.node ./build/Release/inotify.node
COPY --from=build /src/dist/src ./dist/src
COPY --from=plugin /opt/cni/bin/linkerd-cni /opt/cni/bin/linkerd-cni
# Runs as root: it writes root-owned files in the node's /etc/cni/net.d and /opt/cni/bin through
# hostPath mounts. It needs no privileged mode; deploy/daemonset.yaml drops every capability but the
# file ones (CHOWN, DAC_OVERRIDE, FOWNER).
USER 0
EXPOSE 9190
CMD ["node", "dist/src/cli.js", "run"]
