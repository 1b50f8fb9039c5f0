#!/usr/bin/env bash
# The chart's CI: build (or reuse) the pinned helm, lint and render the chart
# with its defaults and every ci/ scenario, then run the manifest tests.
# Called by .ci/run; needs only Go and the Go module proxy.
set -euo pipefail
cd "$(dirname "$0")"
chart=../brainstem

helm="$(./build-helm.sh)"
"$helm" version

# The chart has no usable defaults on purpose (an OIDC issuer and at least one
# wing are required): prove that, then lint and render every scenario.
if "$helm" template brainstem "$chart" >/dev/null 2>&1; then
  echo "run.sh: the chart rendered without an OIDC issuer or wings; the schema must reject that" >&2
  exit 1
fi
for values in "$chart"/ci/*-values.yaml; do
  echo "== $(basename "$values")"
  "$helm" lint --strict "$chart" -f "$values"
  "$helm" template brainstem "$chart" --namespace brainstem -f "$values" >/dev/null
done

# The gateway of this very repository validates the rendered gateway.yaml.
bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
(cd ../.. && go build -o "$bin/brainstem" ./cmd/brainstem)

HELM_BIN="$helm" BRAINSTEM_BIN="$bin/brainstem" go test -race -count=1 ./...
