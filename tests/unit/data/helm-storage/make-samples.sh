#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make-samples.sh CLUSTER_WORKDIR: regenerate the helm release storage objects in this directory
# (the data of tests/unit/test-helm-storage.c; fuzz/corpus/helm-storage/ holds copies).
# CLUSTER_WORKDIR is a running tests/cluster/cluster.sh cluster. The real helm v3.17.2
# (tests/helpers/get-helm.sh) installs chart/demo in a fresh namespace 'helm-storage':
#   demo-secret  Secret driver: revision 1 (values chart/values.yaml, label moduleChecksum=0123...),
#                then revision 2 (--set greeting=again, moduleChecksum=fedc...), so v1 is superseded
#   demo-cm      HELM_DRIVER=configmap, revision 1 as demo-secret's
#   plain        Secret driver, no values and no labels, then uninstalled with --keep-history
# Each object is saved as the API served it (GET), plus the PartialObjectMetadata form of
# demo-secret's revision 2 (what a metadata-only list returns for it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:?usage: make-samples.sh CLUSTER_WORKDIR}
# shellcheck disable=SC1091
. "$work/env"
helm=$(bash "$here/../../../helpers/get-helm.sh")
ns=helm-storage
api() { curl -sSf --cacert "$CA" -H "Authorization: Bearer $ADMIN_TOKEN" "$@"; }

api -X POST -H 'Content-Type: application/json' "$API/api/v1/namespaces" \
        -d "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\"}}" >/dev/null
h() { "$helm" --kubeconfig "$KUBECONFIG_ADMIN" --namespace "$ns" "$@" >/dev/null; }
sum1=0123456789abcdef0123456789abcdef
sum2=fedcba9876543210fedcba9876543210
h upgrade --install demo-secret "$here/chart/demo" -f "$here/chart/values.yaml" --labels moduleChecksum=$sum1
h upgrade --install demo-secret "$here/chart/demo" -f "$here/chart/values.yaml" --set greeting=again \
        --labels moduleChecksum=$sum2
HELM_DRIVER=configmap h upgrade --install demo-cm "$here/chart/demo" -f "$here/chart/values.yaml" \
        --labels moduleChecksum=$sum1
h upgrade --install plain "$here/chart/demo"
h uninstall plain --keep-history

for o in secrets/sh.helm.release.v1.demo-secret.v1 secrets/sh.helm.release.v1.demo-secret.v2 \
        configmaps/sh.helm.release.v1.demo-cm.v1 secrets/sh.helm.release.v1.plain.v1; do
        api "$API/api/v1/namespaces/$ns/$o" >"$here/${o#*/}.json"
done
api -H 'Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1' \
        "$API/api/v1/namespaces/$ns/secrets/sh.helm.release.v1.demo-secret.v2" \
        >"$here/partial.sh.helm.release.v1.demo-secret.v2.json"
api -X DELETE "$API/api/v1/namespaces/$ns" >/dev/null
