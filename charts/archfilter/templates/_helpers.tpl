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
{{- if and (eq .Values.image.flavour "k8s1.35") (not (hasSuffix "-k8s1.35" $tag)) -}}
{{- $tag = printf "%s-k8s1.35" $tag -}}
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

{{/* The scheduler is installed (scheduler.enabled; off: the placement mode alone). */}}
{{- define "archfilter.schedulerEnabled" -}}
{{- if .Values.scheduler.enabled }}true{{ end -}}
{{- end -}}

{{/*
ArchFilterArgs, one values block for both front-ends: the scheduler's
pluginConfig args and the placement companion's --args file render it, so
both decide alike. With credentialProviders.enabled, the files the chart
mounts are named unless archFilterArgs names its own.
*/}}
{{- define "archfilter.archFilterArgs" -}}
{{- $args := deepCopy (default dict .Values.archFilterArgs) -}}
{{- if .Values.credentialProviders.enabled -}}
{{- if not $args.credentialProviderConfig }}{{ $_ := set $args "credentialProviderConfig" "/etc/archfilter-credential-providers/config.yaml" }}{{ end -}}
{{- if not $args.credentialProviderBinDir }}{{ $_ := set $args "credentialProviderBinDir" "/usr/libexec/archfilter/credential-providers" }}{{ end -}}
{{- end -}}
{{- toYaml $args -}}
{{- end -}}

{{/*
archFilterArgs.secretNamespaces as JSON, or nothing when unset: then the
ClusterRoles keep their cluster-wide secrets rule; when set, secrets are
granted by archfilter.secretRoles (a dict: root, name, labels, subject, verbs)
as a Role and RoleBinding in each listed namespace only.
*/}}
{{- define "archfilter.secretNamespaces" -}}
{{- with .Values.archFilterArgs }}{{ with .secretNamespaces }}{{ toJson . }}{{ end }}{{ end -}}
{{- end -}}

{{- define "archfilter.secretRoles" -}}
{{- with include "archfilter.secretNamespaces" .root }}
{{- range $ns := fromJsonArray . }}
---
# Pull secrets of {{ $ns }} only (archFilterArgs.secretNamespaces).
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $.name }}:pull-secrets
  namespace: {{ $ns }}
  labels:
    {{- $.labels | nindent 4 }}
rules:
- apiGroups: [""]
  resources: [secrets]
  verbs: [{{ join ", " $.verbs }}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $.name }}:pull-secrets
  namespace: {{ $ns }}
  labels:
    {{- $.labels | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $.name }}:pull-secrets
subjects:
- {{- toYaml $.subject | nindent 2 }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Volumes (and mounts) both pods get for credential providers. */}}
{{- define "archfilter.credentialProviderVolumes" -}}
{{- if .Values.credentialProviders.enabled }}
- name: credential-provider-config
  configMap:
    name: {{ include "archfilter.fullname" . }}-credential-providers
- name: credential-provider-bin
  hostPath:
    path: {{ .Values.credentialProviders.hostPath }}
    type: Directory
{{- end }}
{{- end -}}

{{- define "archfilter.credentialProviderMounts" -}}
{{- if .Values.credentialProviders.enabled }}
- name: credential-provider-config
  mountPath: /etc/archfilter-credential-providers
  readOnly: true
- name: credential-provider-bin
  mountPath: /usr/libexec/archfilter/credential-providers
  readOnly: true
{{- end }}
{{- end -}}

{{/* --tls-min-version and --tls-cipher-suites (values tls), for the scheduler and the companion. */}}
{{- define "archfilter.tlsArgs" -}}
- --tls-min-version={{ .Values.tls.minVersion }}
- --tls-cipher-suites={{ join "," .Values.tls.cipherSuites }}
{{- end -}}

{{/* The placement mode's objects: archfilter-placement, or <fullnameOverride>-placement. */}}
{{- define "archfilter.placement.name" -}}
{{- if .Values.fullnameOverride -}}
{{- printf "%s-placement" .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
archfilter-placement
{{- end -}}
{{- end -}}

{{- define "archfilter.placement.leaseName" -}}
{{- default (include "archfilter.placement.name" .) .Values.placement.leaderElection.leaseName -}}
{{- end -}}

{{- define "archfilter.placement.certSecret" -}}
{{- printf "%s-tls" (include "archfilter.placement.name" .) -}}
{{- end -}}

{{/*
The companion's repository: placement.image.repository, else the scheduler's
with -placement in place of its -scheduler suffix, as make image and make
release name it (hack/deploy/lib.sh flavour_image: ${IMAGE%-scheduler}-placement).
*/}}
{{- define "archfilter.placement.repository" -}}
{{- default (printf "%s-placement" (trimSuffix "-scheduler" .Values.image.repository)) .Values.placement.image.repository -}}
{{- end -}}

{{/*
The companion's image: repository[:tag][@digest]. The tag defaults to the
scheduler's image.tag (its -k8s1.35 suffix dropped: the companion has one
build), else appVersion: make image and make release push both under one
VERSION.
*/}}
{{- define "archfilter.placement.image" -}}
{{- $img := .Values.placement.image -}}
{{- $repo := include "archfilter.placement.repository" . -}}
{{- $tag := default .Chart.AppVersion (default (trimSuffix "-k8s1.35" (.Values.image.tag | toString)) $img.tag) -}}
{{- if eq $tag "latest" -}}
{{- fail "placement.image.tag: \"latest\" is not allowed; name a release (image.tag, else the chart's appVersion, is the default) or pin placement.image.digest" -}}
{{- end -}}
{{- if and $img.digest $img.tag -}}
{{- printf "%s:%s@%s" $repo $tag $img.digest -}}
{{- else if $img.digest -}}
{{- printf "%s@%s" $repo $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}
{{- end -}}

{{/*
The images this release would pull from the unpublished default repositories
(archfilter/archfilter-scheduler, archfilter/archfilter-placement), one line
each with the values that name it: the install notes warn about them.
*/}}
{{- define "archfilter.unpublishedImages" -}}
{{- if and (include "archfilter.schedulerEnabled" .) (eq .Values.image.repository "archfilter/archfilter-scheduler") }}
  {{ include "archfilter.image" . }}  (image.repository, image.tag)
{{- end }}
{{- if and (or .Values.placement.enabled .Values.heal.enabled) (eq (include "archfilter.placement.repository" .) "archfilter/archfilter-placement") }}
  {{ include "archfilter.placement.image" . }}  ({{ if .Values.placement.image.repository }}placement.image.repository, placement.image.tag{{ else }}named from image.repository and image.tag, or set placement.image.repository{{ end }})
{{- end }}
{{- end -}}

{{- define "archfilter.placement.selectorLabels" -}}
app.kubernetes.io/name: {{ include "archfilter.placement.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "archfilter.placement.labels" -}}
{{ include "archfilter.placement.selectorLabels" . }}
app.kubernetes.io/component: placement
app.kubernetes.io/part-of: archfilter
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The schedulers whose pods the companion leaves to their ArchFilter plugin. */}}
{{- define "archfilter.placement.skipSchedulerNames" -}}
{{- if .Values.placement.skipSchedulerNames -}}
{{- join "," .Values.placement.skipSchedulerNames -}}
{{- else if include "archfilter.schedulerEnabled" . -}}
{{- include "archfilter.schedulerName" . -}}
{{- else -}}
archfilter-scheduler
{{- end -}}
{{- end -}}

{{/*
The companion's --args file: archFilterArgs without the fields only a
scheduler can honour (archTaintToleration: a taint wrapper in the scheduler's
profile; the companion refuses it at start).
*/}}
{{- define "archfilter.placement.args" -}}
apiVersion: kubescheduler.config.k8s.io/v1
kind: ArchFilterArgs
{{- with omit (fromYaml (include "archfilter.archFilterArgs" .)) "archTaintToleration" }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
Egress of the archfilter pods (networkPolicy values as the context): the API
server, the registries its pods' images live on (image indexes and
manifests; pkg/resolver) and DNS.
*/}}
{{- define "archfilter.networkPolicyEgress" -}}
egress:
# The API server.
- to:
  {{- range .apiServer.cidrs }}
  - ipBlock:
      cidr: {{ . }}
  {{- end }}
  ports:
  {{- range .apiServer.ports }}
  - port: {{ . }}
    protocol: TCP
  {{- end }}
{{- if .registries.cidrs }}
# Registries.
- to:
  {{- $except := .registries.except }}
  {{- range $cidr := .registries.cidrs }}
  - ipBlock:
      cidr: {{ $cidr | quote }}
      {{- $mine := list }}
      {{- range $except }}
      {{- if eq (contains ":" .) (contains ":" $cidr) }}
      {{- $mine = append $mine . }}
      {{- end }}
      {{- end }}
      {{- with $mine }}
      except:
      {{- range . }}
      - {{ . | quote }}
      {{- end }}
      {{- end }}
  {{- end }}
  ports:
  {{- range .registries.ports }}
  - port: {{ . }}
    protocol: TCP
  {{- end }}
{{- end }}
{{- if .dns.enabled }}
# DNS.
- to:
  - namespaceSelector:
      {{- toYaml .dns.namespaceSelector | nindent 6 }}
    podSelector:
      {{- toYaml .dns.podSelector | nindent 6 }}
  ports:
  - port: 53
    protocol: UDP
  - port: 53
    protocol: TCP
{{- end }}
{{- end -}}

{{- define "archfilter.networkPolicyRequire" -}}
{{- if not .apiServer.cidrs }}
{{- fail "networkPolicy.apiServer.cidrs: name the API server's addresses (kubectl get endpointslices -n default -l kubernetes.io/service-name=kubernetes) when networkPolicy.enabled" }}
{{- end }}
{{- end -}}

{{/* The heal-only companion's objects (heal.enabled): archfilter-heal, or <fullnameOverride>-heal. */}}
{{- define "archfilter.heal.name" -}}
{{- if .Values.fullnameOverride -}}
{{- printf "%s-heal" .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
archfilter-heal
{{- end -}}
{{- end -}}

{{- define "archfilter.heal.leaseName" -}}
{{- default (include "archfilter.heal.name" .) .Values.heal.leaderElection.leaseName -}}
{{- end -}}

{{- define "archfilter.heal.selectorLabels" -}}
app.kubernetes.io/name: {{ include "archfilter.heal.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "archfilter.heal.labels" -}}
{{ include "archfilter.heal.selectorLabels" . }}
app.kubernetes.io/component: heal
app.kubernetes.io/part-of: archfilter
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
What the companion needs to reach the registries the scheduler reaches (a
dict: root, p: placement or heal values, value: the values' name): the files
archFilterArgs names mounted, the scheduler's cloud identity and its proxy.
*/}}
{{- define "archfilter.companionRegistryAccess" -}}
{{- $root := .root }}{{ $p := .p }}{{ $value := .value }}
{{- $args := fromYaml (include "archfilter.archFilterArgs" $root) }}
{{- $files := dict }}
{{- range $k := list "dockerConfigFile" "credentialProviderConfig" "credentialProviderBinDir" }}
{{- with get $args $k }}{{ $_ := set $files (printf "archFilterArgs.%s" $k) . }}{{ end }}
{{- end }}
{{- range $i, $r := $args.registries }}
{{- with $r.caFile }}{{ $_ := set $files (printf "archFilterArgs.registries[%d].caFile" $i) . }}{{ end }}
{{- end }}
{{- $mounts := list }}
{{- range $p.extraVolumeMounts }}{{ $mounts = append $mounts .mountPath }}{{ end }}
{{- range (fromYamlArray (include "archfilter.credentialProviderMounts" $root)) }}{{ $mounts = append $mounts .mountPath }}{{ end }}
{{- range $k, $path := $files }}
{{- $covered := false }}
{{- range $mounts }}
{{- if or (eq $path .) (hasPrefix (printf "%s/" (trimSuffix "/" .)) $path) }}{{ $covered = true }}{{ end }}
{{- end }}
{{- if not $covered }}
{{- fail (printf "%s.extraVolumeMounts: %s (%s) is not mounted into the %s companion; mount into it what the scheduler gets (extraVolumes/extraVolumeMounts), or it cannot reach the registries the scheduler reaches" $value $k $path $value) }}
{{- end }}
{{- end }}
{{- if and $root.Values.scheduler.enabled $root.Values.serviceAccount.annotations (not $p.serviceAccount.annotations) }}
{{- fail (printf "%s.serviceAccount.annotations: the scheduler's ServiceAccount carries %s (a cloud identity for its registries); give the companion's the same, or it resolves without it" $value (keys $root.Values.serviceAccount.annotations | sortAlpha | join ", ")) }}
{{- end }}
{{- if $root.Values.scheduler.enabled }}
{{- $proxy := list }}
{{- range $root.Values.env }}{{ if has (upper .name) (list "HTTPS_PROXY" "HTTP_PROXY" "NO_PROXY") }}{{ $proxy = append $proxy .name }}{{ end }}{{ end }}
{{- range $proxy }}
{{- $name := . }}
{{- $found := false }}
{{- range $p.env }}{{ if eq .name $name }}{{ $found = true }}{{ end }}{{ end }}
{{- if not $found }}
{{- fail (printf "%s.env: the scheduler reaches registries through %s (env); set it for the companion too" $value $name) }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

