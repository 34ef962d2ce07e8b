{{/* Egress rule to the Kubernetes API server: networkPolicy.apiServer.cidrs (any address when empty), on its ports only. */}}
{{- define "hpa.networkPolicy.apiServerEgress" -}}
{{- $api := .Values.networkPolicy.apiServer -}}
- ports:
    {{- range $api.ports }}
    - protocol: TCP
      port: {{ . }}
    {{- end }}
  {{- if $api.cidrs }}
  to:
    {{- range $api.cidrs }}
    - ipBlock:
        cidr: {{ . }}
    {{- end }}
  {{- end }}
{{- end -}}

{{/* Egress rule to the cluster DNS pods (UDP and TCP). */}}
{{- define "hpa.networkPolicy.dnsEgress" -}}
{{- $dns := .Values.networkPolicy.dns -}}
- to:
    - namespaceSelector:
        {{- toYaml $dns.namespaceSelector | nindent 8 }}
      podSelector:
        {{- toYaml $dns.podSelector | nindent 8 }}
  ports:
    - protocol: UDP
      port: {{ $dns.port }}
    - protocol: TCP
      port: {{ $dns.port }}
{{- end -}}

{{/* Egress rule to the Prometheus pods (networkPolicy.prometheus selectors and port). */}}
{{- define "hpa.networkPolicy.prometheusEgress" -}}
{{- $prom := .Values.networkPolicy.prometheus -}}
- to:
    - namespaceSelector:
        {{- toYaml $prom.namespaceSelector | nindent 8 }}
      podSelector:
        {{- toYaml $prom.podSelector | nindent 8 }}
  ports:
    - protocol: TCP
      port: {{ $prom.port }}
{{- end -}}

{{/* Ingress rule from the Prometheus pods to one port: (dict "ctx" $ "port" 8080); empty when networkPolicy.prometheus.enabled is false. */}}
{{- define "hpa.networkPolicy.prometheusIngress" -}}
{{- $prom := .ctx.Values.networkPolicy.prometheus -}}
{{- if $prom.enabled -}}
- from:
    - namespaceSelector:
        {{- toYaml $prom.namespaceSelector | nindent 8 }}
      podSelector:
        {{- toYaml $prom.podSelector | nindent 8 }}
  ports:
    - protocol: TCP
      port: {{ .port }}
{{- end -}}
{{- end -}}

{{/* Egress to Prometheus when networkPolicy.prometheus.enabled, else nothing. */}}
{{- define "hpa.networkPolicy.prometheusEgressIfEnabled" -}}
{{- if .Values.networkPolicy.prometheus.enabled -}}
{{- include "hpa.networkPolicy.prometheusEgress" . -}}
{{- end -}}
{{- end -}}

{{/*
One component's NetworkPolicy: (dict "ctx" $ "component" "controller" "ingress" <rules YAML>
"egress" <rules YAML>). Egress always has the API server first and DNS after the component's
own rules; networkPolicy.extraEgress and extraIngress are appended.
*/}}
{{- define "hpa.networkPolicy" -}}
{{- $np := .ctx.Values.networkPolicy -}}
{{- $ingress := trim (default "" .ingress) -}}
{{- with $np.extraIngress }}
{{- $ingress = printf "%s\n%s" $ingress (toYaml .) | trim -}}
{{- end }}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "hpa.componentName" (dict "ctx" .ctx "component" .component) }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "hpa.labels" (dict "ctx" .ctx "component" .component) | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "hpa.selectorLabels" (dict "ctx" .ctx "component" .component) | nindent 6 }}
  policyTypes: ["Ingress", "Egress"]
  {{- if $ingress }}
  ingress:
    {{- $ingress | nindent 4 }}
  {{- end }}
  egress:
    {{- include "hpa.networkPolicy.apiServerEgress" .ctx | nindent 4 }}
    {{- with trim (default "" .egress) }}
    {{- . | nindent 4 }}
    {{- end }}
    {{- include "hpa.networkPolicy.dnsEgress" .ctx | nindent 4 }}
    {{- with $np.extraEgress }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{/* Ingress from the API server (its CIDRs when set, else anywhere) and, when enabled, Prometheus, to one port. */}}
{{- define "hpa.networkPolicy.apiServerIngress" -}}
{{- $np := .ctx.Values.networkPolicy -}}
- ports:
    - protocol: TCP
      port: {{ .port }}
  {{- if $np.apiServer.cidrs }}
  from:
    {{- range $np.apiServer.cidrs }}
    - ipBlock:
        cidr: {{ . }}
    {{- end }}
    {{- if and .prometheus $np.prometheus.enabled }}
    - namespaceSelector:
        {{- toYaml $np.prometheus.namespaceSelector | nindent 8 }}
      podSelector:
        {{- toYaml $np.prometheus.podSelector | nindent 8 }}
    {{- end }}
  {{- end }}
{{- end -}}
