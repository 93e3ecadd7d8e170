{{/* The name of every object: archfilter-scheduler unless fullnameOverride. */}}
{{- define "archfilter.fullname" -}}
{{- default "archfilter-scheduler" .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "archfilter.replacement" -}}
{{- if eq .Values.mode "replacement" }}true{{ end -}}
{{- end -}}

{{/* The profile's schedulerName. */}}
{{- define "archfilter.schedulerName" -}}
{{- if .Values.schedulerName -}}
{{- .Values.schedulerName -}}
{{- else if include "archfilter.replacement" . -}}
default-scheduler
{{- else -}}
{{- include "archfilter.fullname" . -}}
{{- end -}}
{{- end -}}

{{/* The leader-election lease's name and namespace. */}}
{{- define "archfilter.leaseName" -}}
{{- if .Values.leaderElection.resourceName -}}
{{- .Values.leaderElection.resourceName -}}
{{- else if include "archfilter.replacement" . -}}
kube-scheduler
{{- else -}}
{{- include "archfilter.fullname" . -}}
{{- end -}}
{{- end -}}

{{- define "archfilter.leaseNamespace" -}}
{{- if .Values.leaderElection.resourceNamespace -}}
{{- .Values.leaderElection.resourceNamespace -}}
{{- else if include "archfilter.replacement" . -}}
kube-system
{{- else -}}
{{- .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* The image: repository[:tag][@digest]; the tag defaults to appVersion with the flavour's suffix. */}}
{{- define "archfilter.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if eq $tag "latest" -}}
{{- fail "image.tag: \"latest\" is not allowed; name a release (the chart's appVersion is the default) or pin image.digest" -}}
{{- end -}}
{{- if and (eq .Values.image.flavour "k8s1.34") (not (hasSuffix "-k8s1.34" $tag)) -}}
{{- $tag = printf "%s-k8s1.34" $tag -}}
{{- end -}}
{{- if and .Values.image.digest .Values.image.tag -}}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest -}}
{{- else if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "archfilter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "archfilter.fullname" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "archfilter.labels" -}}
{{ include "archfilter.selectorLabels" . }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/part-of: archfilter
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Fails when the cluster does not serve a Prometheus Operator kind the values enable. */}}
{{- define "archfilter.requireMonitoringAPI" -}}
{{- $gvk := printf "monitoring.coreos.com/v1/%s" .kind -}}
{{- if not (.root.Capabilities.APIVersions.Has $gvk) -}}
{{- fail (printf "%s: the cluster does not serve %s (install the Prometheus Operator's CRDs, or for helm template pass --api-versions %s)" .value $gvk $gvk) -}}
{{- end -}}
{{- end -}}
