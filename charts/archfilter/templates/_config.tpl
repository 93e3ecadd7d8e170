{{/*
The KubeSchedulerConfiguration: one profile with ArchFilter enabled at every
extension point it implements (multiPoint) and first among the Filter plugins.
With the default values in mode secondary it is
manifests/scheduler-config/secondary-scheduler.yaml (a test compares them).
*/}}
{{- define "archfilter.schedulerConfig" -}}
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: {{ .Values.leaderElection.enabled }}
  {{- if .Values.leaderElection.enabled }}
  resourceName: {{ include "archfilter.leaseName" . }}
  resourceNamespace: {{ include "archfilter.leaseNamespace" . }}
  {{- with .Values.leaderElection.leaseDuration }}
  leaseDuration: {{ . }}
  {{- end }}
  {{- with .Values.leaderElection.renewDeadline }}
  renewDeadline: {{ . }}
  {{- end }}
  {{- with .Values.leaderElection.retryPeriod }}
  retryPeriod: {{ . }}
  {{- end }}
  {{- end }}
profiles:
- schedulerName: {{ include "archfilter.schedulerName" . }}
  plugins:
    multiPoint:
      enabled:
      - name: ArchFilter
    {{- if .Values.archFilterFirst }}
    preEnqueue:
      enabled:
      - name: ArchFilter
    filter:
      enabled:
      - name: ArchFilter
    {{- end }}
  pluginConfig:
  - name: ArchFilter
    {{- with fromYaml (include "archfilter.archFilterArgs" .) }}
    args:
      {{- toYaml . | nindent 6 }}
    {{- else }}
    args: {}
    {{- end }}
{{- end -}}
