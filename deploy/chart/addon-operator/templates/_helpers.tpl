{{/* Names: every object is named after the release, cluster-wide ones too, so two releases
     in two namespaces do not collide. */}}
{{- define "addon-operator.fullname" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "addon-operator.namespace" -}}
{{- default .Release.Namespace .Values.namespace.name -}}
{{- end -}}

{{- define "addon-operator.configMapName" -}}
{{- default (include "addon-operator.fullname" .) .Values.configMap.name -}}
{{- end -}}

{{- define "addon-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* deploy/manifests/ carries the same labels minus the last two, which are helm's. */}}
{{- define "addon-operator.labels" -}}
{{ include "addon-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}
