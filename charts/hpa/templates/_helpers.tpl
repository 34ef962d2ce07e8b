{{/*
Names and labels of every object in the chart. Each template calls these and nothing else for
metadata.name and metadata.labels, so every object carries the same app.kubernetes.io/* labels.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "hpa.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The name prefix of every object: fullnameOverride, or <release>-<name> (<release> when it contains the name). */}}
{{- define "hpa.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The name of one component's objects: (dict "ctx" $ "component" "controller"). */}}
{{- define "hpa.componentName" -}}
{{- printf "%s-%s" (include "hpa.fullname" .ctx | trunc 50 | trimSuffix "-") .component -}}
{{- end -}}

{{/* The chart label: name-version. */}}
{{- define "hpa.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels of one component: (dict "ctx" $ "component" "adapter"). */}}
{{- define "hpa.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hpa.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
{{- end -}}

{{/* All labels of an object: (dict "ctx" $ "component" "adapter"); component may be "". */}}
{{- define "hpa.labels" -}}
{{ include "hpa.selectorLabels" . }}
helm.sh/chart: {{ include "hpa.chart" .ctx }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: hpa
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The image reference: repository@digest or repository:tag (tag defaults to appVersion). */}}
{{- define "hpa.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* Pod-level securityContext: Pod Security "restricted". */}}
{{- define "hpa.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Container-level securityContext: Pod Security "restricted", read-only root filesystem. */}}
{{- define "hpa.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The adapter's Service name (the APIServices point at it). */}}
{{- define "hpa.adapter.serviceName" -}}
{{- include "hpa.componentName" (dict "ctx" . "component" "adapter") -}}
{{- end -}}

{{/* The Secret holding the adapter's serving certificate (tls.crt, tls.key, ca.crt). */}}
{{- define "hpa.adapter.tlsSecretName" -}}
{{- printf "%s-tls" (include "hpa.adapter.serviceName" .) -}}
{{- end -}}

{{/* The name of the adapter's rule ConfigMap. */}}
{{- define "hpa.adapter.configMapName" -}}
{{- if .Values.adapter.existingConfigMap -}}
{{- .Values.adapter.existingConfigMap -}}
{{- else -}}
{{- printf "%s-config" (include "hpa.adapter.serviceName" .) -}}
{{- end -}}
{{- end -}}

{{/* The Lease the controller replicas elect a leader with. */}}
{{- define "hpa.controller.leaseName" -}}
{{- include "hpa.componentName" (dict "ctx" . "component" "controller") -}}
{{- end -}}
