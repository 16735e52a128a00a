{{/*
The resource name prefix: fullnameOverride, else the release name when it
contains the chart name, else "<release>-<chart>". At most 52 characters, so
that "<prefix>-topics-<revision>" and the StatefulSet's pod names
("<prefix>-<ordinal>", with the controller-revision-hash label) stay within
the 63 characters of a label value.
*/}}
{{- define "rostrum.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 52 | trimSuffix "-" }}
{{- end }}

{{- define "rostrum.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "rostrum.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels of every object; the component is added where it applies. */}}
{{- define "rostrum.labels" -}}
helm.sh/chart: {{ include "rostrum.chart" . }}
app.kubernetes.io/name: {{ include "rostrum.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ include "rostrum.tag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels; pass (dict "root" $ "component" "processor"). */}}
{{- define "rostrum.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rostrum.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "rostrum.tag" -}}
{{- .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "rostrum.image" -}}
{{- printf "%s:%s" .Values.image.repository (include "rostrum.tag" .) }}
{{- end }}

{{- define "rostrum.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "rostrum.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Whether the pods need the credentials Secret at all. */}}
{{- define "rostrum.needsCredentials" -}}
{{- if or .Values.redis.auth .Values.kafka.sasl }}true{{ end }}
{{- end }}

{{- define "rostrum.credentialsSecret" -}}
{{- .Values.credentials.existingSecret | default (printf "%s-credentials" (include "rostrum.fullname" .)) }}
{{- end }}

{{- define "rostrum.gatewaySecret" -}}
{{- .Values.gateway.auth.existingSecret | default (printf "%s-gateway" (include "rostrum.fullname" .)) }}
{{- end }}

{{- define "rostrum.group" -}}
{{- .Values.group | default (printf "rostrum-%s" .Values.env) }}
{{- end }}

{{/* The pod security context every rostrum pod runs with: the image's uid 65532. */}}
{{- define "rostrum.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "rostrum.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{/*
rostrum.yaml, the config file of `rostrum run` and `rostrum check`: the
settings the chart owns win over processor.config.
*/}}
{{- define "rostrum.config" -}}
{{- $own := dict "brokers" .Values.kafka.brokers "redis" .Values.redis.address "env" .Values.env "http" (printf ":%d" (int .Values.processor.service.port)) "wal-dir" "/var/lib/rostrum/wal" }}
{{- with .Values.topicPrefix }}{{ $_ := set $own "topic-prefix" . }}{{ end }}
{{- with .Values.group }}{{ $_ := set $own "group" . }}{{ end }}
{{- with .Values.route }}{{ $_ := set $own "route" . }}{{ end }}
{{- with .Values.routeDefault }}{{ $_ := set $own "route-default" . }}{{ end }}
{{- if .Values.kafka.sasl }}
{{- $_ := set $own "kafka-sasl" .Values.kafka.sasl }}
{{- $_ := set $own "kafka-user" (required "kafka.user is required with kafka.sasl" .Values.kafka.user) }}
{{- $_ := set $own "kafka-password-file" "/run/secrets/rostrum/kafka-password" }}
{{- end }}
{{- if .Values.kafka.tls }}{{ $_ := set $own "kafka-tls" true }}{{ end }}
{{- if .Values.redis.auth }}
{{- $_ := set $own "redis-password-file" "/run/secrets/rostrum/redis-password" }}
{{- with .Values.redis.user }}{{ $_ := set $own "redis-user" . }}{{ end }}
{{- end }}
{{- if .Values.redis.tls }}{{ $_ := set $own "redis-tls" true }}{{ end }}
{{- toYaml (merge $own (deepCopy .Values.processor.config)) }}
{{- end }}
