{{/*
The server's config.yaml (docs/configuration.md). Paths and names come from
the chart; the rest from .Values.config. It holds no secret: the PostgreSQL
DSN is a file from its own Secret (accounting.dsnFile).
*/}}
{{- define "sluice.serverConfig" -}}
{{- $c := .Values.config -}}
stateDir: {{ include "sluice.stateDir" . }}
listen: ":{{ .Values.server.service.port }}"
schedulerName: {{ $c.schedulerName | quote }}
shutdownTimeout: {{ $c.shutdownTimeout | quote }}
log:
  {{- toYaml $c.log | nindent 2 }}
leaderElection:
  enabled: true
  namespace: {{ .Release.Namespace }}
  {{- toYaml $c.leaderElection | nindent 2 }}
rest:
  jwtKeyFile: {{ include "sluice.jwtKeyFile" . }}
  {{- toYaml $c.rest | nindent 2 }}
remediation:
  {{- toYaml $c.remediation | nindent 2 }}
scheduler:
  gpuReservationNamespace: {{ .Release.Namespace }}
  gpuReservationImage: {{ include "sluice.image" . }}
  gpuReservationServiceAccount: {{ include "sluice.gpuReservation" . }}
  {{- toYaml $c.scheduler | nindent 2 }}
accounting:
  {{- if eq .Values.ledger.type "postgres" }}
  dsnFile: {{ include "sluice.ledgerDSNFile" . }}
  {{- end }}
  {{- toYaml $c.accounting | nindent 2 }}
slurm:
  {{- if not $c.slurm.launcherImage }}
  launcherImage: {{ include "sluice.image" . | quote }}
  {{- end }}
  {{- if not $c.slurm.clusterDomain }}
  clusterDomain: {{ .Values.clusterDomain | quote }}
  {{- end }}
  {{- toYaml $c.slurm | nindent 2 }}
kai:
  enabled: {{ .Values.kai.enabled }}
webhook:
  enabled: {{ .Values.webhook.enabled }}
  {{- if .Values.webhook.enabled }}
  certDir: {{ include "sluice.webhookCertDir" . }}
  addr: ":{{ .Values.webhook.port }}"
  hosts: {{ include "sluice.webhookHosts" . }}
  serviceName: {{ include "sluice.webhookService" . }}
  serviceNamespace: {{ .Release.Namespace }}
  extraSchedulerNames: {{ toJson .Values.webhook.extraSchedulerNames }}
  governGPUs:
    {{- toYaml .Values.webhook.governGPUs | nindent 4 }}
  {{- if .Values.webhook.clientAuth.caBundle }}
  clientCAFile: {{ include "sluice.webhookClientCADir" . }}/ca.crt
  clientNames: {{ toJson .Values.webhook.clientAuth.commonNames }}
  {{- end }}
  {{- end }}
{{- end -}}
