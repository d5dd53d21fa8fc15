{{/* Names: every object is <fullname>-<part>, so two releases never collide. */}}
{{- define "sluice.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sluice.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "sluice.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "sluice.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sluice.server" -}}{{ include "sluice.fullname" . | trunc 56 | trimSuffix "-" }}-server{{- end -}}
{{- define "sluice.gpuReservation" -}}{{ include "sluice.fullname" . | trunc 47 | trimSuffix "-" }}-gpu-reservation{{- end -}}
{{- define "sluice.agent" -}}{{ include "sluice.fullname" . | trunc 57 | trimSuffix "-" }}-agent{{- end -}}
{{- define "sluice.webhookService" -}}{{ include "sluice.fullname" . | trunc 55 | trimSuffix "-" }}-webhook{{- end -}}
{{- define "sluice.jwtSecret" -}}{{ default (printf "%s-jwt" (include "sluice.fullname" .)) .Values.jwt.existingSecret }}{{- end -}}
{{- /* The Secret the server keeps the webhook's CA and certificate in (webhook.DefaultCertSecret). */ -}}
{{- define "sluice.webhookCertSecret" -}}sluice-webhook-certs{{- end -}}
{{- define "sluice.ledgerDSNSecret" -}}{{ default (printf "%s-ledger-dsn" (include "sluice.fullname" .)) .Values.ledger.postgres.existingSecret }}{{- end -}}
{{- define "sluice.ledgerDSNKey" -}}{{ if .Values.ledger.postgres.existingSecret }}{{ .Values.ledger.postgres.existingSecretKey }}{{ else }}dsn{{ end }}{{- end -}}
{{- define "sluice.ledgerClaim" -}}{{ default (printf "%s-ledger" (include "sluice.fullname" .)) .Values.ledger.sqlite.persistence.existingClaim }}{{- end -}}

{{- define "sluice.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "sluice.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sluice
{{- end -}}

{{/* Selector labels of one component ("server" or "agent"); never change them on upgrade. */}}
{{- define "sluice.selector" -}}
app.kubernetes.io/name: {{ include "sluice.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "sluice.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}

{{/*
The webhook Service's DNS names: what the serving certificate must cover. The
first is the one the API server calls, which cert-controller checks the
certificate against.
*/}}
{{- define "sluice.webhookHosts" -}}
{{- $svc := include "sluice.webhookService" . -}}
{{- $ns := .Release.Namespace -}}
{{- list (printf "%s.%s.svc" $svc $ns) $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.clusterDomain) | toJson -}}
{{- end -}}

{{/* Where the server keeps its state, and where each mounted Secret lands. */}}
{{- define "sluice.stateDir" -}}/var/lib/sluice/state{{- end -}}
{{- define "sluice.jwtKeyFile" -}}/etc/sluice/jwt/jwt.key{{- end -}}
{{- define "sluice.ledgerDSNFile" -}}/etc/sluice/ledger/dsn{{- end -}}
{{/*
webhook.certDir: where the server writes the serving certificate and key it
copies from its Secret (a memory emptyDir), or where webhook.tls.existingSecret
is mounted. It is stateDir/webhook, the directory a server that does not read
webhook.certDir uses too.
*/}}
{{/* Where the CA of the API server's webhook client certificate is mounted. */}}
{{- define "sluice.webhookClientCADir" -}}/etc/sluice/webhook-client{{- end -}}
{{- define "sluice.webhookCertDir" -}}{{ include "sluice.stateDir" . }}/webhook{{- end -}}
