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
