#!/usr/bin/env bash
# Builds the single-node cluster the tests run (test/cluster/): etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kubectl, containerd 2 with its runc shim, Helm
# (the chart's tests: charts/cni-chainer) and cni-load (the config tests' runtime: test/cni/), from
# the pinned tools modules under tools/cluster/. The binaries land in a cache directory keyed by the
# hash of those go.mod and go.sum files, of cni-load's source and of this script, and are reused
# while the key is the same.
# Prints the bin directory on its last line.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/tools/cluster"
key="$(cat "$0" "$tools"/*/go.mod "$tools"/*/go.sum "$tools"/cni-load/*.go | sha256sum | cut -c1-16)"
cache="${CNI_CHAINER_CLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cni-chainer/cluster}"
bin="$cache/$key/bin"
if [ -f "$bin/.complete" ]; then
  echo "$bin"
  exit 0
fi
# One build at a time: test files that run in parallel each ask for the binaries, and a second build
# would remove the first one's partial directory under it. A waiter finds the first one's result.
mkdir -p "$cache/$key"
exec 9> "$cache/$key/.lock"
flock 9
if [ -f "$bin/.complete" ]; then
  echo "$bin"
  exit 0
fi
rm -rf "$bin.partial" && mkdir -p "$bin.partial"
export CGO_ENABLED=1 GOFLAGS=-mod=mod GOTOOLCHAIN=local
start=$SECONDS
# -trimpath and no DWARF: smaller binaries, and a cache that does not name this checkout's path.
ldflags='-s -w'
# The version the binaries report (kubectl version, the API server's /version, the kubelet's node
# status), as Kubernetes' own build stamps it: read from the pinned module, never typed twice.
k8s_version="$(cd "$tools/kubernetes" && go list -m -f '{{.Version}}' k8s.io/kubernetes)"
minor="${k8s_version#v1.}"; minor="${minor%%.*}"
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp="$stamp -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
(cd "$tools/kubernetes" && go build -trimpath -ldflags="$ldflags $stamp" -o "$bin.partial/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl)
(cd "$tools/kubernetes" && go build -trimpath -ldflags="$ldflags" -o "$bin.partial/etcd" go.etcd.io/etcd/server/v3)
# no_btrfs: the btrfs snapshotter needs kernel headers through cgo and the tests use overlayfs.
(cd "$tools/containerd" && go build -trimpath -tags no_btrfs -ldflags="$ldflags" -o "$bin.partial/" \
  github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2)
# cni-load: a CNI config directory as containerd 2 loads it, from the go-cni and libcni that containerd
# pins (tools/cluster/cni-load/main.go), for the tests that check the agent's reading of configs.
(cd "$tools/cni-load" && go build -trimpath -ldflags="$ldflags" -o "$bin.partial/cni-load" .)
# Helm 4, in a module of its own: it brings its own k8s.io versions, which must not move Kubernetes'.
helm_version="$(cd "$tools/helm" && go list -m -f '{{.Version}}' helm.sh/helm/v4)"
(cd "$tools/helm" && go build -trimpath -ldflags="$ldflags -X helm.sh/helm/v4/internal/version.version=$helm_version" -o "$bin.partial/" helm.sh/helm/v4/cmd/helm)
echo "build-cluster: built in $((SECONDS - start)) s" >&2
touch "$bin.partial/.complete"
rm -rf "$bin" && mv "$bin.partial" "$bin"
echo "$bin"
