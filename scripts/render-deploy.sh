#!/usr/bin/env bash
# Renders deploy/base/cni-chainer.yaml from the Helm chart (charts/cni-chainer), so that kustomize and
# Helm users install the same objects from one source (docs/decisions.md, "One source for both
# install paths"). The chart's defaults, namespace linkerd-cni, the Namespace object included, and the
# ValidatingAdmissionPolicy API declared served (Kubernetes >= 1.30; the chart needs 1.31), as a
# `helm install` on such a cluster renders them. test/deploy/chart.test.ts fails when the file and
# the chart drift apart: run this after changing the chart.
#
#   bash scripts/render-deploy.sh [helm]    # the helm binary; default: the one scripts/build-cluster.sh builds
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
helm="${1:-$(bash "$root/scripts/build-cluster.sh" | tail -n 1)/helm}"
out="$root/deploy/base/cni-chainer.yaml"
{
  echo "# Rendered from charts/cni-chainer by scripts/render-deploy.sh: do not edit; change the chart and run it."
  "$helm" template linkerd2-cni "$root/charts/cni-chainer" --namespace linkerd-cni \
    --kube-version 1.31.0 --api-versions admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy \
    --set renderNamespace=true
} > "$out.partial"
mv "$out.partial" "$out"
echo "$out"
