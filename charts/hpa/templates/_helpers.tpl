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

{{/* The adapter's Service name (the APIServices point at it). */}}
{{- define "hpa.adapter.serviceName" -}}
{{- include "hpa.componentName" (dict "ctx" . "component" "adapter") -}}
{{- end -}}

{{/* The Secret holding the adapter's serving certificate (tls.crt, tls.key, ca.crt). */}}
{{- define "hpa.adapter.tlsSecretName" -}}
{{- if eq .Values.tls.mode "existingSecret" -}}
{{- required "tls.existingSecret.adapter is required with tls.mode=existingSecret" .Values.tls.existingSecret.adapter -}}
{{- else -}}
{{- printf "%s-tls" (include "hpa.adapter.serviceName" .) -}}
{{- end -}}
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

{{/* The webhook's Service name (the MutatingWebhookConfiguration points at it). */}}
{{- define "hpa.admission.serviceName" -}}
{{- include "hpa.componentName" (dict "ctx" . "component" "vpa-admission") -}}
{{- end -}}

{{/* The Secret holding the admission webhook's serving certificate. */}}
{{- define "hpa.admission.tlsSecretName" -}}
{{- if eq .Values.tls.mode "existingSecret" -}}
{{- required "tls.existingSecret.admission is required with tls.mode=existingSecret" .Values.tls.existingSecret.admission -}}
{{- else -}}
{{- printf "%s-tls" (include "hpa.admission.serviceName" .) -}}
{{- end -}}
{{- end -}}

{{/*
The ServiceAccount of one component: (dict "ctx" $ "component" "controller" "c" .Values.controller).
serviceAccount.name, or the component's object name.
*/}}
{{- define "hpa.serviceAccountName" -}}
{{- if .c.serviceAccount.name -}}
{{- .c.serviceAccount.name -}}
{{- else if .c.serviceAccount.create -}}
{{- include "hpa.componentName" (dict "ctx" .ctx "component" .component) -}}
{{- else -}}
{{- fail (printf "%s.serviceAccount.name is required when serviceAccount.create is false" .component) -}}
{{- end -}}
{{- end -}}

{{/* The ServiceAccount object of one component (same dict as hpa.serviceAccountName). */}}
{{- define "hpa.serviceAccount" -}}
{{- if .c.serviceAccount.create }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "hpa.serviceAccountName" . }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "hpa.labels" (dict "ctx" .ctx "component" .component) | nindent 4 }}
  {{- with .c.serviceAccount.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
# The token is mounted by the pod spec, which needs it; nothing else gets one by default.
automountServiceAccountToken: false
{{- end }}
{{- end -}}

{{/* A RoleBinding or ClusterRoleBinding subject list naming one component's ServiceAccount. */}}
{{- define "hpa.subjects" -}}
subjects:
  - kind: ServiceAccount
    name: {{ include "hpa.serviceAccountName" . }}
    namespace: {{ .ctx.Release.Namespace }}
{{- end -}}

{{/*
The Deployment of one component, with every pod option of docs/install.md. Arguments:
  ctx, component (label value), c (the component's values), container (container name),
  args (list of strings, before extraArgs), ports (list of container ports),
  volumes and volumeMounts (lists, before the extra ones).
*/}}
{{- define "hpa.deployment" -}}
{{- $ctx := .ctx -}}
{{- $c := .c -}}
{{- $name := include "hpa.componentName" (dict "ctx" $ctx "component" .component) -}}
{{- $podSecurity := mergeOverwrite (deepCopy $ctx.Values.podSecurityContext) (deepCopy $c.podSecurityContext) -}}
{{- $security := mergeOverwrite (deepCopy $ctx.Values.securityContext) (deepCopy $c.securityContext) -}}
{{- $volumes := concat (.volumes | default list) ($c.extraVolumes | default list) -}}
{{- $mounts := concat (.volumeMounts | default list) ($c.extraVolumeMounts | default list) -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
  namespace: {{ $ctx.Release.Namespace }}
  labels:
    {{- include "hpa.labels" (dict "ctx" $ctx "component" .component) | nindent 4 }}
spec:
  replicas: {{ $c.replicas }}
  revisionHistoryLimit: 3
  {{- with $c.updateStrategy }}
  strategy:
    {{- /* rollingUpdate only with RollingUpdate (the API server refuses it with Recreate). */}}
    {{- toYaml (ternary (omit . "rollingUpdate") . (eq (toString .type) "Recreate")) | nindent 4 }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "hpa.selectorLabels" (dict "ctx" $ctx "component" .component) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "hpa.labels" (dict "ctx" $ctx "component" .component) | nindent 8 }}
        {{- with $c.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with $c.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ include "hpa.serviceAccountName" (dict "ctx" $ctx "component" .component "c" $c) }}
      # Every component talks to the API server: it needs its token.
      automountServiceAccountToken: true
      enableServiceLinks: false
      {{- if $c.hostNetwork }}
      hostNetwork: true
      dnsPolicy: ClusterFirstWithHostNet
      {{- end }}
      securityContext:
        {{- toYaml $podSecurity | nindent 8 }}
      {{- with $ctx.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- range . }}
        - name: {{ . }}
        {{- end }}
      {{- end }}
      {{- with $c.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      containers:
        - name: {{ .container }}
          image: {{ include "hpa.image" $ctx }}
          imagePullPolicy: {{ $ctx.Values.image.pullPolicy }}
          args:
            {{- range .args }}
            - {{ . | quote }}
            {{- end }}
            - {{ printf "--log-level=%s" $ctx.Values.logging.level | quote }}
            - {{ printf "--log-format=%s" $ctx.Values.logging.format | quote }}
            {{- range $c.extraArgs }}
            - {{ . | quote }}
            {{- end }}
          env:
            - name: PYTHONDONTWRITEBYTECODE
              value: "1"
            - name: NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
            {{- with $c.env }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- with $c.envFrom }}
          envFrom:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          ports:
            {{- toYaml .ports | nindent 12 }}
          {{- with $c.livenessProbe }}
          livenessProbe:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- with $c.readinessProbe }}
          readinessProbe:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          resources:
            {{- toYaml $c.resources | nindent 12 }}
          securityContext:
            {{- toYaml $security | nindent 12 }}
          {{- with $mounts }}
          volumeMounts:
            {{- toYaml . | nindent 12 }}
          {{- end }}
      {{- with $volumes }}
      volumes:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $c.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}

{{/* A ClusterIP (or service.type) Service of one component: (dict "ctx" "component" "c" "ports"). */}}
{{- define "hpa.service" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "hpa.componentName" (dict "ctx" .ctx "component" .component) }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "hpa.labels" (dict "ctx" .ctx "component" .component) | nindent 4 }}
  {{- with .c.service.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ .c.service.type }}
  selector:
    {{- include "hpa.selectorLabels" (dict "ctx" .ctx "component" .component) | nindent 4 }}
  ports:
    {{- toYaml .ports | nindent 4 }}
{{- end -}}

{{/* A ServiceMonitor endpoint's common fields (interval, scrapeTimeout, relabelings). */}}
{{- define "hpa.serviceMonitor.endpointOptions" -}}
interval: {{ .Values.serviceMonitor.interval }}
{{- with .Values.serviceMonitor.scrapeTimeout }}
scrapeTimeout: {{ . }}
{{- end }}
{{- with .Values.serviceMonitor.relabelings }}
relabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.serviceMonitor.metricRelabelings }}
metricRelabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* A ServiceMonitor of one plain-HTTP component: (dict "ctx" "component" "port"). */}}
{{- define "hpa.serviceMonitor.http" -}}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ include "hpa.componentName" (dict "ctx" .ctx "component" .component) }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "hpa.labels" (dict "ctx" .ctx "component" .component) | nindent 4 }}
    {{- with .ctx.Values.serviceMonitor.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels:
      {{- include "hpa.selectorLabels" (dict "ctx" .ctx "component" .component) | nindent 6 }}
  endpoints:
    - port: {{ .port }}
      path: /metrics
      {{- include "hpa.serviceMonitor.endpointOptions" .ctx | nindent 6 }}
{{- end -}}

{{/* The names of the three VPA components' objects. */}}
{{- define "hpa.recommender.name" -}}
{{- include "hpa.componentName" (dict "ctx" . "component" "vpa-recommender") -}}
{{- end -}}
{{- define "hpa.updater.name" -}}
{{- include "hpa.componentName" (dict "ctx" . "component" "vpa-updater") -}}
{{- end -}}

{{/* The Leases of the VPA components: the code's default names (hpa/app/recommender.py,
updater.py, webhook.py), in the release namespace. */}}
{{- define "hpa.recommender.leaseName" -}}vpa-recommender-lease{{- end -}}
{{- define "hpa.updater.leaseName" -}}vpa-updater{{- end -}}
{{- define "hpa.admission.statusLeaseName" -}}vpa-admission-controller{{- end -}}

{{/* The PEM CA of tls.mode=existingSecret, base64 for a caBundle. */}}
{{- define "hpa.existingCaBundle" -}}
{{- required "tls.existingSecret.caBundle is required with tls.mode=existingSecret" .Values.tls.existingSecret.caBundle | b64enc -}}
{{- end -}}

{{/* A cert-manager serving Certificate for a Service: (dict "ctx" "component" "service" "secretName"). */}}
{{- define "hpa.certificate" -}}
{{- $svc := .service -}}
{{- $ns := .ctx.Release.Namespace -}}
{{- $cm := .ctx.Values.tls.certManager -}}
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: {{ $svc }}
  namespace: {{ $ns }}
  labels:
    {{- include "hpa.labels" (dict "ctx" .ctx "component" .component) | nindent 4 }}
spec:
  secretName: {{ .secretName }}
  duration: {{ $cm.duration }}
  renewBefore: {{ $cm.renewBefore }}
  commonName: {{ $svc }}.{{ $ns }}.svc
  dnsNames:
    - {{ $svc }}
    - {{ $svc }}.{{ $ns }}
    - {{ $svc }}.{{ $ns }}.svc
    - {{ $svc }}.{{ $ns }}.svc.cluster.local
  privateKey:
    algorithm: ECDSA
    size: 256
    rotationPolicy: Always
  usages:
    - server auth
  issuerRef:
    {{- if $cm.issuerRef }}
    {{- toYaml $cm.issuerRef | nindent 4 }}
    {{- else }}
    name: {{ include "hpa.fullname" .ctx }}-ca
    kind: Issuer
    group: cert-manager.io
    {{- end }}
{{- end -}}

{{/*
The helm-mode serving certificate of a Service: a Secret reused on upgrades (lookup), else a new
CA and a certificate it signs. Returns YAML {caBundle, crt, key} (base64), for fromYaml.
(dict "ctx" "service" "secretName")
*/}}
{{- define "hpa.generatedCertificate" -}}
{{- $svc := .service -}}
{{- $ns := .ctx.Release.Namespace -}}
{{- $existing := lookup "v1" "Secret" $ns .secretName -}}
{{- if and $existing $existing.data (index $existing.data "ca.crt") (index $existing.data "tls.crt") (index $existing.data "tls.key") -}}
caBundle: {{ index $existing.data "ca.crt" }}
crt: {{ index $existing.data "tls.crt" }}
key: {{ index $existing.data "tls.key" }}
{{- else -}}
{{- $days := int .ctx.Values.tls.helm.validityDays -}}
{{- $ca := genCA (printf "%s-ca" $svc) $days -}}
{{- $dns := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) -}}
{{- $cert := genSignedCert (printf "%s.%s.svc" $svc $ns) nil $dns $days $ca -}}
caBundle: {{ $ca.Cert | b64enc }}
crt: {{ $cert.Cert | b64enc }}
key: {{ $cert.Key | b64enc }}
{{- end -}}
{{- end -}}

{{/*
The informer rules every VPA component shares (hpa/app/vertical_informers.py): VPAs, LimitRanges,
HPAs and the seven well-known controller kinds (list, watch), and `get` on the /scale of any other
owner (upstream's system:vpa-target-reader).
*/}}
{{- define "hpa.vpa.informerRules" -}}
- apiGroups: ["autoscaling.k8s.io"]
  resources: ["verticalpodautoscalers"]
  verbs: ["list", "watch"]
- apiGroups: [""]
  resources: ["limitranges", "replicationcontrollers"]
  verbs: ["list", "watch"]
- apiGroups: ["apps"]
  resources: ["daemonsets", "deployments", "replicasets", "statefulsets"]
  verbs: ["list", "watch"]
- apiGroups: ["batch"]
  resources: ["jobs", "cronjobs"]
  verbs: ["list", "watch"]
- apiGroups: ["autoscaling"]
  resources: ["horizontalpodautoscalers"]
  verbs: ["list", "watch"]
- apiGroups: ["*"]
  resources: ["*/scale"]
  verbs: ["get"]
{{- end -}}

{{/*
A Role and RoleBinding on the Leases of one component in the release namespace:
(dict "ctx" "component" "c" "own" <Lease it holds> "read" <Lease it only reads, optional>).
`create` cannot be limited by name; `get` and `update` are limited to the component's Lease.
*/}}
{{- define "hpa.leaseRole" -}}
{{- $name := printf "%s-leases" (include "hpa.componentName" (dict "ctx" .ctx "component" .component)) -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "hpa.labels" (dict "ctx" .ctx "component" .component) | nindent 4 }}
rules:
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["create"]
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    resourceNames: [{{ .own | quote }}]
    verbs: ["get", "update"]
  {{- with .read }}
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    resourceNames: [{{ . | quote }}]
    verbs: ["get"]
  {{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "hpa.labels" (dict "ctx" .ctx "component" .component) | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name }}
{{ include "hpa.subjects" . }}
{{- end -}}

{{/*
The bindings of an aggregated API server's delegated authentication and authorization:
(dict "ctx" "component" "c" "name" <binding name prefix>). system:auth-delegator (TokenReviews,
SubjectAccessReviews) and, in kube-system, extension-apiserver-authentication-reader (the front
proxy's CA and allowed names in the ConfigMap extension-apiserver-authentication).
*/}}
{{- define "hpa.delegatedAuthBindings" -}}
# Delegated authentication and authorization: TokenReviews and SubjectAccessReviews.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ .name }}:system:auth-delegator
  labels:
    {{- include "hpa.labels" (dict "ctx" .ctx "component" .component) | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:auth-delegator
{{ include "hpa.subjects" . }}
---
# The front proxy's CA and allowed names: kube-system/extension-apiserver-authentication.
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .name }}-auth-reader
  namespace: kube-system
  labels:
    {{- include "hpa.labels" (dict "ctx" .ctx "component" .component) | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: extension-apiserver-authentication-reader
{{ include "hpa.subjects" . }}
{{- end -}}
